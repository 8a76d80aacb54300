/**
 * The lifecycle told as random stories of one VM: several connections open and close (make
 * before break), `$connect`s are processed after newer events, `$disconnect` events arrive
 * late, twice, never, or before their own `$connect`; health reports arrive out of order,
 * liveness checks drop holders API Gateway calls gone, the sweeper runs and time jumps by
 * minutes or hours. Each story runs against the real store on dynalite and against a small
 * reference model of the rules; after every event the stored entry must equal the model's,
 * and the product's promises must hold.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MIN_AWAY_TO_HOLD } from '../../lib/domain/disruption.ts';
import { ISTIO_API_VERSION } from '../../lib/domain/model.ts';
import type { SweepPolicy } from '../../lib/domain/sweep-policy.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import { runSweep, type SweepStore } from '../../lib/registration/sweep.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { NO_HEARTBEATS } from '../fixtures/sweep-stand-ins.ts';
import { LifecycleModel } from './lifecycle-model.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const policy: SweepPolicy = { gracePeriodMs: 5 * MINUTE, maxConnectionAgeMs: 2 * HOUR };
const NS = 'prop';

type Op =
  | { kind: 'connect'; delay: number; loseDisconnect: boolean; clean: boolean }
  | { kind: 'close'; pick: number }
  | { kind: 'deliver'; pick: number; duplicate: boolean }
  | { kind: 'overtaken' }
  | { kind: 'liveness' }
  | { kind: 'health'; pick: number; healthy: boolean; delay: number }
  | { kind: 'sweep'; held: boolean }
  | { kind: 'advance'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('connect' as const),
      // Mostly on time; sometimes a connect processed after newer events (it still holds).
      delay: fc.oneof(
        { weight: 4, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) },
      ),
      loseDisconnect: fc.boolean(),
      // How it will close: 1000 from an agent that stops, or dropped (1006).
      clean: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('close' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('deliver' as const),
      pick: fc.nat(),
      // API Gateway may deliver a $disconnect twice.
      duplicate: fc.boolean(),
    }),
  },
  // A connection whose $disconnect is processed before its own $connect.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('overtaken' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('liveness' as const) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('health' as const),
      pick: fc.nat(),
      healthy: fc.boolean(),
      delay: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 2,
    // A sweep in the fail-static hold (every zone disrupted) or in normal mode.
    arbitrary: fc.record({ kind: fc.constant('sweep' as const), held: fc.boolean() }),
  },
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
  /** It closes with 1000 (a deliberate departure) rather than dropping. */
  clean: boolean;
  closedAt?: number;
  /** Its `$disconnect` reached the store. */
  delivered: boolean;
  /** A liveness check ran after it closed (API Gateway then answers 410 for it). */
  checkedGone: boolean;
}

let dynamo: TestDynamo;
let store: RegistrarStore;
let run = 0;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
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
  // Each sweep also reads its namespace's own departure keys (the fair sweeper): ~20 requests
  // where it made 12; on a loaded 2-core machine the runs took up to ~95 s of the 120 s.
}, 240_000);

async function tellStory(story: number, ops: Op[]): Promise<void> {
  // Each story lives 30 days after the previous one, so its sweeps also clear older stories.
  let now = Date.UTC(2025, 0, 1) + story * 30 * 24 * HOUR;
  const ref = { namespace: NS, name: `vm-${story}` };
  const model = new LifecycleModel(policy);
  const connections: Connection[] = [];
  const pending: Connection[] = [];
  let lastProbeTime: number | undefined;
  let lastLiveness: number | undefined;

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
          holds: outcome !== 'departed',
          loseDisconnect: step.loseDisconnect,
          clean: step.clean,
          delivered: false,
          checkedGone: false,
        });
        break;
      }
      case 'overtaken': {
        const id = `s${story}-c${connections.length}`;
        const left = await store.leave({ connectionId: id, entry: ref, at: now });
        expect(left.outcome).toBe(model.disconnect(id, now));
        const outcome = await store.connect(connectChange(ref, id, now - 1));
        expect(outcome).toBe(model.connect(id, now - 1));
        // Its connection is gone already; if the entry did not exist, it holds as a phantom.
        connections.push({
          id,
          connectedAt: now - 1,
          live: false,
          holds: outcome !== 'departed',
          loseDisconnect: true,
          clean: false,
          closedAt: now,
          // Its $disconnect came first, so it did not end the holding.
          delivered: false,
          checkedGone: false,
        });
        break;
      }
      case 'liveness': {
        // What a liveness check does for this entry: API Gateway answers 410 for every holder
        // that is not open. (The windows that decide when are tested in sweep.test.ts.)
        lastLiveness = now;
        const gone = model.holders().filter((id) => !connections.find((c) => c.id === id)?.live);
        for (const connection of connections) if (!connection.live) connection.checkedGone = true;
        if (gone.length === 0) break;
        const outcome = await store.dropHolders(ref, gone, now);
        const expected = model.drop(gone, now);
        expect(outcome).toBe(expected === 'not-holder' ? 'unchanged' : expected);
        break;
      }
      case 'close': {
        const connection = live[step.pick % Math.max(live.length, 1)];
        if (connection) close(connection, now);
        break;
      }
      case 'deliver': {
        const index = step.pick % Math.max(pending.length, 1);
        const connection = pending[index];
        if (!connection) break;
        if (!step.duplicate) pending.splice(index, 1);
        const at = connection.closedAt ?? now;
        connection.delivered = true;
        const departure = connection.clean ? 'clean' : 'abnormal';
        const result = await store.leave({
          connectionId: connection.id,
          entry: ref,
          at,
          departure,
        });
        expect(result.outcome).toBe(model.disconnect(connection.id, at, departure));
        break;
      }
      case 'health': {
        const connection = live[step.pick % Math.max(live.length, 1)];
        if (!connection) break;
        const at = now - step.delay;
        const report = step.healthy
          ? { connectionId: connection.id, healthy: true, at }
          : { connectionId: connection.id, healthy: false, message: `probe failed at ${at}`, at };
        const outcome = await store.reportHealth({ ...report, entry: ref });
        expect(outcome).toBe(model.health(report));
        // A live connection that holds the entry always lands its report (or a newer one did).
        if (connection.holds) expect(outcome).not.toBe('not-holder');
        break;
      }
      case 'sweep': {
        const before = await store.getEntry(ref);
        await runSweep(failStaticView(store, step.held, now), {
          now,
          policy,
          maxDeletes: 1000,
          deletesPerSecond: 1e6,
          sleep: async () => {},
          failStatic: FAIL_STATIC,
        });
        model.sweep(now, step.held);
        const exists = (await store.getEntry(ref)) !== undefined;
        // The guard: a hold never deletes an entry that went away abnormally or looks stale.
        const deliberate =
          before?.connection?.connectedAt === undefined &&
          before?.connection?.departure === 'clean';
        if (step.held && before && !deliberate) expect(exists).toBe(true);
        // A deliberate departure is deleted once its grace period is over, hold or not.
        const disconnectedAt = before?.connection?.disconnectedAt;
        if (
          deliberate &&
          disconnectedAt !== undefined &&
          now - disconnectedAt >= policy.gracePeriodMs
        ) {
          expect(exists).toBe(false);
        }
        if (!step.held) assertSweptWhenAbandoned(connections, now, lastLiveness, exists);
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
    // Every live connection whose connect was accepted holds the entry, which is connected.
    for (const connection of connections.filter((c) => c.live && c.holds)) {
      expect(stored?.connection?.connectionIds).toContain(connection.id);
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
 * holder is closed, and each one's departure is known (its disconnect landed, or a liveness
 * check found it gone) since the grace period; or the newest connect is older than 1.5 x the
 * maximum age, the stale backstop for departures nobody saw.
 */
function assertSweptWhenAbandoned(
  connections: Connection[],
  now: number,
  lastLiveness: number | undefined,
  exists: boolean,
): void {
  const holders = connections.filter((connection) => connection.holds);
  if (holders.length === 0 || holders.some((connection) => connection.live)) return;
  const lastClose = Math.max(...holders.map((connection) => connection.closedAt ?? now));
  const newestConnect = Math.max(...holders.map((connection) => connection.connectedAt));
  const staleOver = now - newestConnect > 1.5 * policy.maxConnectionAgeMs;
  const allLanded = holders.every((connection) => connection.delivered);
  // When the departure was recorded, at the latest: a liveness check after the last close
  // records it at its own time (a disconnect delivered later finds nothing left to do);
  // otherwise the disconnects that landed record it at the last close.
  const checkedAfterClose = lastLiveness !== undefined && lastLiveness >= lastClose;
  const seenBy = checkedAfterClose ? lastLiveness : allLanded ? lastClose : undefined;
  const graceOver = seenBy !== undefined && now - seenBy >= policy.gracePeriodMs;
  // The stale rule applies to an entry still marked connected: one a liveness check already
  // marked disconnected waits out its grace period instead.
  const markedDisconnected = lastLiveness !== undefined && lastLiveness >= lastClose;
  if (graceOver || (staleOver && !markedDisconnected)) expect(exists).toBe(false);
}

const FAIL_STATIC = {
  threshold: 0.55,
  windowMs: 5 * MINUTE,
  secondaryDeletesPerSecond: 0.1,
  holdBoundMs: HOUR,
  sweepIntervalMs: MINUTE,
};

/**
 * The real store, with the fail-static state forced: held (the only zone is all away, nobody
 * connected) or normal (nothing away). Which counters lead there is the sweep tests' subject;
 * here it is the guard the sweep applies to one entry's lifecycle.
 */
function failStaticView(store: RegistrarStore, held: boolean, now: number): SweepStore {
  return {
    sweepCandidates: (cutoffs, limit, states) => store.sweepCandidates(cutoffs, limit, states),
    sweepNamespaces: () => store.sweepNamespaces(),
    departuresOf: (namespace, kind, cutoff) => store.departuresOf(namespace, kind, cutoff),
    deleteSwept: (record) => store.deleteSwept(record),
    connectedIn: (windows, limit) => store.connectedIn(windows, limit),
    dropHolders: (entry, gone, at) => store.dropHolders(entry, gone, at),
    livenessMark: () => store.livenessMark(),
    setLivenessMark: (at) => store.setLivenessMark(at),
    // Enough away for a hold (one or two VMs away never hold: MIN_AWAY_TO_HOLD).
    zoneCounts: async () =>
      held ? [{ namespace: NS, zone: '-', connected: 0, away: MIN_AWAY_TO_HOLD }] : [],
    newestConnectAt: async () => now,
    disruptionRecord: async () => undefined,
    saveDisruptionRecord: async () => {},
    // No recount: the forced counters stand (as a view without the call meant before).
    awayByZone: async () => undefined,
    releaseHold: async () => 'normal',
    ...NO_HEARTBEATS,
  };
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
    origin: 'test-origin',
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: true,
    groupGeneration: 1,
    connectionId,
    connectedAt,
    controller: 'workload-registrar',
    identity: { principal: 'token:t1' },
  };
}

function summarize(record: NonNullable<Awaited<ReturnType<RegistrarStore['getEntry']>>>) {
  return {
    connectedAt: record.connection?.connectedAt,
    disconnectedAt: record.connection?.disconnectedAt,
    connectionIds: record.connection?.connectionIds ?? [],
    holderSince: record.connection?.holderSince ?? {},
    newestConnectionId: record.connection?.newestConnectionId,
    departure: record.connection?.departure,
    health: record.health,
  };
}
