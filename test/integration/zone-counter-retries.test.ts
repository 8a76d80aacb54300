import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { runSweep } from '../../lib/registration/sweep.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { zoneCountUpdate } from '../../lib/store/dynamodb-entry-writes.ts';
import { ensureTable } from '../../lib/store/ensure-table.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { type FaultProxy, startFaultProxy } from '../fixtures/fault-proxy.ts';

/**
 * The zone counters behind fail static, when a counter update is applied but its response is
 * lost and the SDK sends it again: counted once. Real store behind the fault proxy.
 */
let dynamo: TestDynamo;
let proxy: FaultProxy;
let store: RegistrarStore;
let truth: RegistrarStore;
const TABLE = `zones-${randomUUID()}`;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  proxy = await startFaultProxy(dynamo.endpoint, 7);
  const tableName = TABLE;
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: proxy.endpoint });
  await ensureTable(raw, tableName);
  store = composeRegistry(documentClientFor(raw), tableName);
  truth = composeRegistry(dynamo.client, tableName);
});
afterAll(async () => {
  await proxy?.close();
  await dynamo?.close();
});

const ZONE = 'eu-west-1/eu-west-1a';
const change = (name: string, connectionId: string, at: number) =>
  connectChange({
    name,
    namespace: 'shop',
    connectionId,
    connectedAt: at,
    locality: `${ZONE}/rack-1`,
  });

/** Fails the next zone-counter update after DynamoDB applied it (the SDK then retries it). */
function loseNextCounterResponse() {
  proxy.plan = {
    rate: 1,
    when: 'after',
    kind: 'internal',
    limit: proxy.counts.failedAfter + 1,
    match: (operation, body) => operation === 'UpdateItem' && body.includes('"ZONE#'),
  };
}

const counts = async () => (await truth.zoneCounts()).find((zone) => zone.zone === ZONE);

describe('zone counters under lost responses', () => {
  it('counts a connect and an abnormal departure once each when the SDK resends their updates', async () => {
    const now = Date.now();
    loseNextCounterResponse();
    expect(await store.connect(change('vm-1', 'c1', now))).toBe('created');
    expect(proxy.counts.failedAfter).toBe(1);
    expect(await counts()).toMatchObject({ connected: 1, away: 0 });

    loseNextCounterResponse();
    await store.leave({
      connectionId: 'c1',
      entry: { namespace: 'shop', name: 'vm-1' },
      at: now + 1_000,
      departure: 'abnormal',
    });
    expect(proxy.counts.failedAfter).toBe(2);
    expect(await counts()).toMatchObject({ connected: 0, away: 1 });
  });
});

describe('a zone counter that drifted up', () => {
  it('does not hold deletions: the sweep counts the away entries from the index', async () => {
    const MINUTE = 60_000;
    const T0 = Date.now() - 60 * MINUTE;
    // The first test's crashed VM is deleted by hand (its part leaves zone a's counters).
    await truth.deleteEntry({ namespace: 'shop', name: 'vm-1' });
    // A zone of 2 VMs that both crashed, and an 'away' counter one too high (as after a
    // resend that landed behind another transition): 3 would be enough for a hold.
    for (const name of ['crash-1', 'crash-2']) {
      await truth.connect({
        ...change(name, `c-${name}`, T0),
        entry: {
          ...change(name, '', T0).entry,
          spec: { address: '10.0.0.2', locality: 'eu-west-1/eu-west-1b/r' },
        },
      });
      await truth.leave({
        connectionId: `c-${name}`,
        entry: { namespace: 'shop', name },
        at: T0 + MINUTE,
        departure: 'abnormal',
      });
    }
    await dynamo.client.send(
      new UpdateCommand(
        zoneCountUpdate(TABLE, 'shop#eu-west-1/eu-west-1b', 7, { away: 1 }, 'drift') as never,
      ),
    );
    const zoneB = (await truth.zoneCounts()).find((z) => z.zone === 'eu-west-1/eu-west-1b');
    expect(zoneB?.away).toBe(3);

    const result = await runSweep(truth, {
      now: T0 + 10 * MINUTE,
      policy: { gracePeriodMs: 5 * MINUTE, maxConnectionAgeMs: 120 * MINUTE },
      maxDeletes: 100,
      deletesPerSecond: 1_000,
      sleep: async () => {},
      failStatic: {
        threshold: 0.55,
        windowMs: 5 * MINUTE,
        secondaryDeletesPerSecond: 1_000,
        holdBoundMs: 60 * MINUTE,
        sweepIntervalMs: MINUTE,
      },
    });
    expect(result.disruption?.mode).not.toBe('held');
    expect(result.deleted.map((d) => d.name).sort()).toEqual(['crash-1', 'crash-2']);
  });
});
