import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRequests } from '../../lib/store/request-counter.ts';
import {
  CELL_SPREAD,
  UNSHARDED_ZONE_PARTITION,
  ZONE_SHARDS,
  zonePartition,
} from '../../lib/store/table-definition.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Cell counters (a namespace's entries in a zone) without a hot key: a mass departure spreads
 * its counter writes over the partition keys (counted on the wire), and the counts stay exact.
 * Real store on dynalite.
 */
const ZONE = 'eu-west-1/eu-west-1a';
const T0 = Date.UTC(2025, 5, 1, 12);

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

function change(ref: { namespace: string; name: string }, at: number) {
  return connectChange({
    ...ref,
    connectionId: `c-${ref.name}`,
    connectedAt: at,
    locality: `${ZONE}/rack-1`,
  });
}

async function leaveAll(store: Awaited<ReturnType<typeof freshRegistry>>['store'], refs: Ref[]) {
  for (let i = 0; i < refs.length; i += 64) {
    await Promise.all(
      refs.slice(i, i + 64).map((ref) =>
        store.leave({
          connectionId: `c-${ref.name}`,
          entry: ref,
          at: T0 + 1_000,
          departure: 'abnormal',
        }),
      ),
    );
  }
}

type Ref = { namespace: string; name: string };

function counterWritesPerKey(requests: ReturnType<typeof countRequests>) {
  const perKey = new Map<string, number>();
  for (const { command, input } of requests.requests()) {
    const key = (input.Key as { pk?: string } | undefined)?.pk ?? '';
    if (command !== 'UpdateItem' || !key.startsWith('ZONE')) continue;
    perKey.set(key, (perKey.get(key) ?? 0) + 1);
  }
  return perKey;
}

describe('cell counters spread over shards', () => {
  it("spreads one namespace's mass departure over CELL_SPREAD keys, and the count stays exact", async () => {
    const { store, client } = await freshRegistry(dynamo.endpoint, 'zone-shards');
    const count = 320;
    const refs = Array.from({ length: count }, (_, i) => ({ namespace: 'shop', name: `vm-${i}` }));
    for (let i = 0; i < count; i += 64) {
      await Promise.all(refs.slice(i, i + 64).map((ref) => store.connect(change(ref, T0))));
    }
    const requests = countRequests(client);
    await leaveAll(store, refs);
    const perKey = counterWritesPerKey(requests);
    const writes = [...perKey.values()];
    expect(writes.reduce((a, b) => a + b, 0)).toBe(count);
    expect(perKey.size).toBe(CELL_SPREAD);
    // Even spread is count/8 = 40 a key; a hash leaves some keys busier, never a hot one.
    expect(Math.max(...writes)).toBeLessThanOrEqual((2 * count) / CELL_SPREAD);
    expect(perKey.has(UNSHARDED_ZONE_PARTITION)).toBe(false);

    expect(await store.zoneCounts()).toEqual([
      { namespace: 'shop', zone: ZONE, connected: 0, away: count, left: 0 },
    ]);
  });

  it("spreads many namespaces' departures over all ZONE_SHARDS keys, each namespace counted apart", async () => {
    const { store, client } = await freshRegistry(dynamo.endpoint, 'zone-shards-many');
    const namespaces = Array.from({ length: 16 }, (_, i) => `team-${i}`);
    const refs = namespaces.flatMap((namespace) =>
      Array.from({ length: 40 }, (_, i) => ({ namespace, name: `vm-${i}` })),
    );
    for (let i = 0; i < refs.length; i += 64) {
      await Promise.all(refs.slice(i, i + 64).map((ref) => store.connect(change(ref, T0))));
    }
    const requests = countRequests(client);
    await leaveAll(store, refs);
    const perKey = counterWritesPerKey(requests);
    expect(perKey.size).toBe(ZONE_SHARDS);
    expect(Math.max(...perKey.values())).toBeLessThanOrEqual((3 * refs.length) / ZONE_SHARDS);

    const counts = await store.zoneCounts();
    expect(counts.map((c) => c.namespace)).toEqual([...namespaces].sort());
    for (const cell of counts) expect(cell).toMatchObject({ zone: ZONE, connected: 0, away: 40 });
  });

  it('ignores the zone-wide counters of before: they cannot say whose VMs they counted', async () => {
    const { store, client, tableName } = await freshRegistry(dynamo.endpoint, 'zone-migration');
    await store.connect(change({ namespace: 'shop', name: 'vm-1' }, T0));
    for (const pk of [UNSHARDED_ZONE_PARTITION, zonePartition(3)]) {
      await client.send(
        new PutCommand({ TableName: tableName, Item: { pk, sk: ZONE, connected: 50, away: 40 } }),
      );
    }
    expect(await store.zoneCounts()).toEqual([
      { namespace: 'shop', zone: ZONE, connected: 1, away: 0, left: 0 },
    ]);
  });
});
