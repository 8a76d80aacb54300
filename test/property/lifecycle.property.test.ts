/**
 * The lifecycle told as random stories of one VM: several connections open and close (make
 * before break), `$disconnect` events arrive late or never, health reports arrive out of order,
 * the sweeper runs and time jumps by minutes or hours. Each story runs against the real store on
 * dynalite and against a small reference model of the rules; after every event the stored entry
 * must equal the model's, and the product's promises must hold.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ISTIO_API_VERSION } from '../../lib/domain/model.ts';
import type { SweepPolicy } from '../../lib/domain/sweep-policy.ts';
import { runSweep } from '../../lib/registration/sweep.ts';
import { DynamoDbRegistryStore } from '../../lib/store/dynamodb-registry-store.ts';
import type { ConnectChange } from '../../lib/store/registry-store.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { LifecycleModel } from './lifecycle-model.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const policy: SweepPolicy = { gracePeriodMs: 5 * MINUTE, maxConnectionAgeMs: 2 * HOUR };
const NS = 'prop';

type Op =
  | { kind: 'connect'; delay: number; loseDisconnect: boolean }
  | { kind: 'close'; pick: number }
  | { kind: 'deliver'; pick: number }
  | { kind: 'health'; pick: number; healthy: boolean; delay: number }
  | { kind: 'sweep' }
  | { kind: 'advance'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('connect' as const),
      // Mostly on time; sometimes a connect processed after newer events (it must change nothing).
      delay: fc.oneof(
        { weight: 4, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) },
      ),
      loseDisconnect: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('close' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('deliver' as const), pick: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('health' as const),
      pick: fc.nat(),
      healthy: fc.boolean(),
      delay: fc.integer({ min: 0, max: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('sweep' as const) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 4 * MINUTE, max: 6 * MINUTE }),
        fc.integer({ min: HOUR, max: 4 * HOUR }),
      ),
    }),
  },
);

interface Connection {
  id: string;
  connectedAt: number;
  live: boolean;
  /** The connect was accepted: the connection holds the entry until its disconnect lands. */
  holds: boolean;
  loseDisconnect: boolean;
  closedAt?: number;
  /** Its `$disconnect` reached the store. */
  delivered: boolean;
}

let dynamo: TestDynamo;
let store: DynamoDbRegistryStore;
let run = 0;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = new DynamoDbRegistryStore(dynamo.client, dynamo.tableName);
});
afterAll(async () => {
  await dynamo?.close();
});

it('keeps every lifecycle promise under random interleavings of events', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 50, size: 'medium' }), async (ops) => {
      run += 1;
      await tellStory(run, ops);
    }),
    { numRuns: 100 },
  );
}, 120_000);

async function tellStory(story: number, ops: Op[]): Promise<void> {
  // Each story lives 30 days after the previous one, so its sweeps also clear older stories.
  let now = Date.UTC(2025, 0, 1) + story * 30 * 24 * HOUR;
  const ref = { namespace: NS, name: `vm-${story}` };
  const model = new LifecycleModel(policy);
  const connections: Connection[] = [];
  const pending: Connection[] = [];
  let lastProbeTime: number | undefined;

  const close = (connection: Connection, at: number) => {
    connection.live = false;
    connection.closedAt = at;
    if (!connection.loseDisconnect) pending.push(connection);
  };

  for (const step of ops) {
    now += 1;
    const live = connections.filter((connection) => connection.live);
    switch (step.kind) {
      case 'connect': {
        const id = `s${story}-c${connections.length}`;
        const at = now - step.delay;
        const outcome = await store.connect(connectChange(ref, id, at));
        expect(outcome).toBe(model.connect(id, at));
        connections.push({
          id,
          connectedAt: at,
          live: true,
          holds: outcome === 'created' || outcome === 'reconnected',
          loseDisconnect: step.loseDisconnect,
          delivered: false,
        });
        break;
      }
      case 'close': {
        const connection = live[step.pick % Math.max(live.length, 1)];
        if (connection) close(connection, now);
        break;
      }
      case 'deliver': {
        const [connection] = pending.splice(step.pick % Math.max(pending.length, 1), 1);
        if (!connection) break;
        const at = connection.closedAt ?? now;
        connection.delivered = true;
        const result = await store.disconnect({ connectionId: connection.id, at });
        expect(result.outcome).toBe(model.disconnect(connection.id, at));
        break;
      }
      case 'health': {
        const connection = live[step.pick % Math.max(live.length, 1)];
        if (!connection) break;
        const at = now - step.delay;
        const report = step.healthy
          ? { connectionId: connection.id, healthy: true, at }
          : { connectionId: connection.id, healthy: false, message: `probe failed at ${at}`, at };
        const result = await store.reportHealth(report);
        expect(result.outcome).toBe(model.health(report));
        break;
      }
      case 'sweep': {
        await runSweep(store, {
          now,
          policy,
          maxDeletes: 1000,
          deletesPerSecond: 1e6,
          sleep: async () => {},
        });
        model.sweep(now);
        assertSweptWhenAbandoned(connections, now, (await store.getEntry(ref)) !== undefined);
        break;
      }
      case 'advance': {
        now += step.ms;
        // API Gateway closes every connection at its maximum age.
        for (const connection of live) {
          const limit = connection.connectedAt + policy.maxConnectionAgeMs;
          if (limit <= now) close(connection, limit);
        }
        break;
      }
    }

    const stored = await store.getEntry(ref);
    // The stored entry is exactly what the rules say.
    expect(stored && summarize(stored)).toEqual(model.summary());
    // An entry exists and is connected whenever a live connection holds it.
    if (connections.some((connection) => connection.live && connection.holds)) {
      expect(stored?.connection?.connectedAt).toBeDefined();
    }
    // Health never goes backwards in time.
    if (!stored) lastProbeTime = undefined;
    const probed = stored?.health?.lastProbeTime;
    if (probed !== undefined) {
      if (lastProbeTime !== undefined) expect(probed).toBeGreaterThanOrEqual(lastProbeTime);
      lastProbeTime = probed;
    }
  }
}

/**
 * Deleted once no connection has held the entry for the grace period and the sweeper ran. Every
 * holder is closed, and either all their disconnects landed and the grace period passed since
 * the last close, or the newest connect is older than 1.5 x the maximum age: a lost disconnect
 * is caught only by the stale rule.
 */
function assertSweptWhenAbandoned(connections: Connection[], now: number, exists: boolean): void {
  const holders = connections.filter((connection) => connection.holds);
  if (holders.length === 0 || holders.some((connection) => connection.live)) return;
  const lastClose = Math.max(...holders.map((connection) => connection.closedAt ?? now));
  const newestConnect = Math.max(...holders.map((connection) => connection.connectedAt));
  const graceOver = now - lastClose >= policy.gracePeriodMs;
  const staleOver = now - newestConnect > 1.5 * policy.maxConnectionAgeMs;
  const allLanded = holders.every((connection) => connection.delivered);
  if ((allLanded && graceOver) || staleOver) expect(exists).toBe(false);
}

function connectChange(
  ref: { namespace: string; name: string },
  connectionId: string,
  connectedAt: number,
): ConnectChange {
  return {
    entry: {
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadEntry',
      metadata: { ...ref },
      spec: { address: '10.0.0.1' },
    },
    autoRegistrationGroup: 'web',
    healthChecksEnabled: true,
    groupGeneration: 1,
    connectionId,
    connectedAt,
    controller: 'workload-registrar',
    identity: { principal: 'token:t1' },
  };
}

function summarize(record: NonNullable<Awaited<ReturnType<DynamoDbRegistryStore['getEntry']>>>) {
  return {
    connectedAt: record.connection?.connectedAt,
    disconnectedAt: record.connection?.disconnectedAt,
    connectionIds: record.connection?.connectionIds ?? [],
    newestConnectionId: record.connection?.newestConnectionId,
    health: record.health,
  };
}
