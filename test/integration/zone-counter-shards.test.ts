import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRequests } from '../../lib/store/request-counter.ts';
import {
  UNSHARDED_ZONE_PARTITION,
  ZONE_SHARDS,
  zonePartition,
} from '../../lib/store/table-definition.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Zone counters without a hot key: a mass departure in one zone spreads its counter writes
 * over ZONE_SHARDS partition keys (counted on the wire), and the counts stay exact. Real
 * store on dynalite.
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

function change(name: string, at: number) {
  return connectChange({
    name,
    namespace: 'shop',
    connectionId: `c-${name}`,
    connectedAt: at,
    locality: `${ZONE}/rack-1`,
  });
}

describe('zone counters spread over shards', () => {
  it('a mass departure in one zone writes no counter key more than ~1/ZONE_SHARDS of the time', async () => {
    const { store, client } = await freshRegistry(dynamo.endpoint, 'zone-shards');
    const count = 640;
    const names = Array.from({ length: count }, (_, i) => `vm-${i}`);
    for (let i = 0; i < count; i += 64) {
      await Promise.all(names.slice(i, i + 64).map((name) => store.connect(change(name, T0))));
    }
    const requests = countRequests(client);
    for (let i = 0; i < count; i += 64) {
      await Promise.all(
        names.slice(i, i + 64).map((name) =>
          store.leave({
            connectionId: `c-${name}`,
            entry: { namespace: 'shop', name },
            at: T0 + 1_000,
            departure: 'abnormal',
          }),
        ),
      );
    }
    const perKey = new Map<string, number>();
    for (const { command, input } of requests.requests()) {
      const key = (input.Key as { pk?: string } | undefined)?.pk ?? '';
      if (command !== 'UpdateItem' || !key.startsWith('ZONE')) continue;
      perKey.set(key, (perKey.get(key) ?? 0) + 1);
    }
    const writes = [...perKey.values()];
    expect(writes.reduce((a, b) => a + b, 0)).toBe(count);
    expect(perKey.size).toBe(ZONE_SHARDS);
    // Even spread is count/32 = 20 a key; a hash leaves some keys busier, never a hot one.
    expect(Math.max(...writes)).toBeLessThanOrEqual((2 * count) / ZONE_SHARDS);
    expect(perKey.has(UNSHARDED_ZONE_PARTITION)).toBe(false);

    const [zone] = await store.zoneCounts();
    expect(zone).toEqual({ zone: ZONE, connected: 0, away: count });
  });

  it('sums the unsharded counters of before with the shards that now move them', async () => {
    const { store, client, tableName } = await freshRegistry(dynamo.endpoint, 'zone-migration');
    const names = ['old-1', 'old-2', 'old-3'];
    for (const name of names) await store.connect(change(name, T0));
    // As a deployment from before the shards left them: the three connects counted on the one
    // unsharded item, no shard item yet.
    for (let shard = 0; shard < ZONE_SHARDS; shard++) {
      await client.send(
        new DeleteCommand({ TableName: tableName, Key: { pk: zonePartition(shard), sk: ZONE } }),
      );
    }
    await client.send(
      new PutCommand({
        TableName: tableName,
        Item: { pk: UNSHARDED_ZONE_PARTITION, sk: ZONE, connected: 3, away: 0 },
      }),
    );
    expect(await store.zoneCounts()).toEqual([{ zone: ZONE, connected: 3, away: 0 }]);

    // Two of them crash now: their shards go below zero, the sum is right.
    for (const name of names.slice(0, 2)) {
      await store.leave({
        connectionId: `c-${name}`,
        entry: { namespace: 'shop', name },
        at: T0 + 1_000,
        departure: 'abnormal',
      });
    }
    expect(await store.zoneCounts()).toEqual([{ zone: ZONE, connected: 1, away: 2 }]);
  });
});
