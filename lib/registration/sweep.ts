import {
  cellKey,
  type DisruptionPolicy,
  type DisruptionState,
  evaluateDisruption,
  nextRecord,
  pacingOf,
  refillCredit,
  type SweepMode,
  zoneOf,
} from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis } from '../domain/model.ts';
import {
  isDueForSweep,
  type LivenessPolicy,
  livenessDueAt,
  livenessWindows,
  type SweepPolicy,
  sweepCutoffs,
  sweepReason,
} from '../domain/sweep-policy.ts';
import type {
  DisruptionStore,
  Holder,
  RegistryStore,
  SweepIndexState,
} from '../store/registry-store.ts';
import { type ConnectionLiveness, checkHolders } from './liveness.ts';

export interface SweepOptions {
  now: EpochMillis;
  policy: SweepPolicy & Partial<LivenessPolicy>;
  /** Most deletions one run attempts; the next run (a minute later) continues. */
  maxDeletes: number;
  /** Deletions per second, so a mass expiry does not flood the mesh with endpoint removals. */
  deletesPerSecond: number;
  /** Report what would be deleted, delete nothing (`registrar sweep --dry-run`). */
  dryRun?: boolean;
  /** Injected so tests pace deletions without waiting; real timers by default. */
  sleep?: (ms: number) => Promise<void>;
  /**
   * True once the run must stop (its invocation is near its deadline). Checked before every
   * delete and every liveness check, so a mass expiry ends the run early, never in a timeout;
   * what is left is due again on the next run.
   */
  outOfTime?: () => boolean;
  /** With a liveness policy: check connected entries' holders; absent, no checks. */
  liveness?: ConnectionLiveness;
  /** A holder younger than this may still be in its `$connect` (see checkHolders). */
  connectSettleMs?: number;
  /** Liveness checks in flight at once; default LIVENESS_CONCURRENCY. */
  livenessConcurrency?: number;
  /**
   * Fail static (lib/domain/disruption.ts): pace, slow or hold the deletions of abnormally
   * departed entries by the zones' disruption. Absent: every due entry at the normal rate
   * (a manual sweep with explicit flags, tests of the plain rules). Needs a DisruptionStore.
   */
  failStatic?: DisruptionPolicy & { sweepIntervalMs: number };
}

export interface SweptEntry {
  namespace: string;
  name: string;
  reason: 'disconnected' | 'stale';
}

export interface SweepResult {
  /** Deleted (or, in a dry run, due and would be deleted). */
  deleted: SweptEntry[];
  /** Deletes that lost to a write landing after the read (a reconnect): the entry stays. */
  conflicts: number;
  candidatesRead: number;
  /** Connected entries whose holders were checked with API Gateway. */
  livenessChecked: number;
  /** Holders API Gateway said were gone, dropped (in a dry run: found). */
  phantomsDropped: number;
  /** Entries marked disconnected because every holder was gone. */
  livenessDisconnected: number;
  /** Holders API Gateway could not answer for (throttled, denied, unreachable): not dropped. */
  livenessUnknown: number;
  /** Why the first unknown answer was unknown, for the log line. */
  firstUnknown?: string;
  /** The run stopped at its deadline with work left. */
  stoppedEarly: boolean;
  /**
   * Deletes and liveness checks that failed (a store or API Gateway error the SDK's retries
   * did not get past). Each is isolated: the run goes on with the next entry, and the next
   * run tries the failed ones again. One throttled delete must not stop every other.
   */
  failed: number;
  /** The first failure's message, for the log line. */
  firstFailure?: string;
  dryRun: boolean;
  /** With failStatic: the disruption this run saw, and the mode of the run before. */
  disruption?: DisruptionState & { previousMode: SweepMode | undefined };
  /** Deletions held back, by cell (`<namespace>#<zone>`: the cell's entries away abnormally). */
  held: Record<string, number>;
  /** Due deletions deferred by a disrupted cell's secondary rate, by cell. */
  slowed: Record<string, number>;
  /** Deletions of abnormally departed entries made after a hold outlived its bound, by cell. */
  afterHoldBound: Record<string, number>;
}

/** What the sweep needs from storage; any RegistryStore will do. */
export type SweepStore = Pick<
  RegistryStore,
  | 'sweepCandidates'
  | 'deleteSwept'
  | 'connectedIn'
  | 'dropHolders'
  | 'livenessMark'
  | 'setLivenessMark'
> &
  Partial<DisruptionStore>;

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * One sweeper run, in two parts:
 * 1. Deletes auto-registered entries that stayed disconnected past the grace period, or still
 *    look connected long after API Gateway must have closed them (the stale backstop). Reads
 *    only candidates from the sweep index and re-checks each with the pure policy, so the
 *    index only narrows the search and never decides; hand-made entries are never touched.
 * 2. Checks the holders of the connected entries due for a liveness check (each once per
 *    interval) and drops those API Gateway says are gone: a VM whose `$disconnect` was lost
 *    is marked disconnected within the interval, and deleted after the grace period.
 */
export async function runSweep(store: SweepStore, options: SweepOptions): Promise<SweepResult> {
  const result: SweepResult = {
    deleted: [],
    conflicts: 0,
    candidatesRead: 0,
    livenessChecked: 0,
    phantomsDropped: 0,
    livenessDisconnected: 0,
    livenessUnknown: 0,
    stoppedEarly: false,
    failed: 0,
    dryRun: options.dryRun ?? false,
    held: {},
    slowed: {},
    afterHoldBound: {},
  };
  await deleteDue(store, options, result);
  if (!result.stoppedEarly) await checkLiveness(store, options, result);
  return result;
}

async function deleteDue(store: SweepStore, options: SweepOptions, result: SweepResult) {
  const sleep = options.sleep ?? realSleep;
  const outOfTime = options.outOfTime ?? (() => false);
  const guard = options.failStatic
    ? await failStaticGuard(store, options, result).catch((error: unknown) => {
        // Without the counters the run cannot tell a fault from departures: it deletes only
        // clean departures (never held anyway) and leaves the rest, and the record, to the
        // next run.
        recordFailure(result, error);
        return undefined;
      })
    : undefined;
  const unknown = options.failStatic !== undefined && guard === undefined;
  // Spacing deletions evenly: 1000 ms / 50 per second = one every 20 ms.
  const intervalMs = 1000 / options.deletesPerSecond;
  let attempts = 0;
  // While every namespace is held, the abnormal (D) and stale (C) shards are not even read: a
  // hold costs no reads per held entry, and clean departures (L, read first) are never stuck
  // behind them. A hold of some namespaces only (see holdOf) reads them and skips those.
  const allHeld = guard?.state.mode === 'held' && guard.state.heldNamespaces === undefined;
  const states: SweepIndexState[] = allHeld || unknown ? ['L'] : ['L', 'D', 'C'];
  const candidates = store.sweepCandidates(
    sweepCutoffs(options.now, options.policy),
    options.maxDeletes,
    states,
    (error) => recordFailure(result, error),
  );
  try {
    for await (const record of candidates) {
      result.candidatesRead += 1;
      if (!isDueForSweep(record, options.now, options.policy)) continue;
      const { namespace } = record.entry.metadata;
      const zone = zoneOf(record.entry.spec.locality);
      const cell = cellKey(namespace, zone);
      if (unknown && !isDeliberate(record)) continue;
      const guarded = guard !== undefined && !isDeliberate(record);
      const pacing = guarded ? pacingOf(guard.state, namespace, zone, options.now) : 'normal';
      if (pacing === 'held') {
        add(result.held, cell);
        continue;
      }
      if (guarded && pacing === 'slowed') {
        // A disrupted cell deletes at the secondary rate, carried from run to run as credit.
        if ((guard.credit[cell] ?? 0) < 1) {
          add(result.slowed, cell);
          continue;
        }
        guard.credit[cell] = (guard.credit[cell] ?? 0) - 1;
      }
      if (outOfTime()) {
        result.stoppedEarly = true;
        return;
      }
      if (result.dryRun) {
        result.deleted.push(swept(record));
      } else {
        if (attempts > 0) await sleep(intervalMs);
        const note = !guarded
          ? undefined
          : pacing === 'slowed'
            ? 'fail static slowed it: its zone was disrupted'
            : guard.state.mode === 'hold-expired'
              ? 'fail static had held it; deleted once the hold outlived its bound'
              : undefined;
        const deletion = { at: options.now, ...(note ? { note } : {}) };
        const outcome = await store.deleteSwept(record, deletion).catch((error: unknown) => {
          recordFailure(result, error);
          return 'failed' as const;
        });
        if (outcome === 'deleted') {
          result.deleted.push(swept(record));
          if (guarded && guard.state.mode === 'hold-expired') add(result.afterHoldBound, cell);
        } else if (outcome === 'conflict') result.conflicts += 1;
      }
      attempts += 1;
      if (attempts >= options.maxDeletes) return;
    }
  } finally {
    if (guard && !result.dryRun) {
      const { sweepIntervalMs: _, ...policy } = options.failStatic ?? guard.policy;
      await store
        .saveDisruptionRecord?.({ ...nextRecord(guard.state, guard.credit, options.now), policy })
        .catch((error: unknown) => recordFailure(result, error));
    }
  }
}

/** Up to this many away entries are counted from the index each run; more: the counters. */
const AWAY_RECOUNT_LIMIT = 1_000;

/**
 * Reads the cells' counters, the newest connect and the previous run's record (O(cells +
 * shards) reads, whatever the number of entries), and decides this run's mode.
 */
async function failStaticGuard(store: SweepStore, options: SweepOptions, result: SweepResult) {
  const policy = options.failStatic;
  if (!policy || !store.zoneCounts || !store.newestConnectAt || !store.disruptionRecord) {
    throw new Error('a fail-static sweep needs a store with zone counters (a DisruptionStore)');
  }
  const [counted, newestConnectAt, previous, actual] = await Promise.all([
    store.zoneCounts(),
    store.newestConnectAt(),
    store.disruptionRecord(),
    store.awayByZone?.(AWAY_RECOUNT_LIMIT),
  ]);
  // The index says how many are really away: a counter that drifted up (an ADD resent after
  // another transition, a crash between two writes) must not hold deletions on its own.
  const zones = actual
    ? counted.map((zone) => ({
        ...zone,
        away: Math.min(zone.away, actual[cellKey(zone.namespace, zone.zone)] ?? 0),
      }))
    : counted;
  const state = evaluateDisruption({
    now: options.now,
    zones,
    newestConnectAt,
    previous,
    policy,
    lookbackMs: policy.windowMs + options.policy.gracePeriodMs,
    maxConnectionAgeMs: options.policy.maxConnectionAgeMs,
  });
  const credit = refillCredit(state, previous, options.now, policy);
  result.disruption = { ...state, previousMode: previous?.mode };
  // A hold of every namespace does not read the entries it holds: count them from the cells.
  // A hold of some namespaces counts each held entry as the run meets it.
  if (state.mode === 'held' && state.heldNamespaces === undefined) {
    for (const zone of state.zones) if (zone.away > 0) result.held[zone.cell] = zone.away;
  }
  return { state, credit, policy };
}

/** A clean close: never held, never slowed (an entry without a record reads as abnormal). */
function isDeliberate(record: EntryRecord): boolean {
  const connection = record.connection;
  return connection?.connectedAt === undefined && connection?.departure === 'clean';
}

function add(counts: Record<string, number>, zone: string): void {
  counts[zone] = (counts[zone] ?? 0) + 1;
}

/**
 * Checks run side by side, this many at a time: at ~25 ms a check, 32 lanes answer ~1,200
 * connections a second, while 100,000 VMs with a 5-minute interval need ~330. The management
 * API's client keeps up to 50 sockets, so every lane has one.
 */
export const LIVENESS_CONCURRENCY = 32;

async function checkLiveness(store: SweepStore, options: SweepOptions, result: SweepResult) {
  const { liveness, policy, now } = options;
  if (!liveness || policy.livenessIntervalMs === undefined || !policy.sweepIntervalMs) return;
  const outOfTime = options.outOfTime ?? (() => false);
  const concurrency = options.livenessConcurrency ?? LIVENESS_CONCURRENCY;
  // Each run covers the time since the previous one: a schedule that fires late, early or
  // twice neither skips an entry nor checks it twice.
  let mark: EpochMillis | undefined;
  try {
    mark = await store.livenessMark();
  } catch (error) {
    // Without the mark the run cannot tell which entries are due: the next run checks them.
    recordFailure(result, error);
    return;
  }
  const from = mark ?? now - policy.sweepIntervalMs;
  const windows = livenessWindows({ from, to: now }, policy as LivenessPolicy);
  // Entries arrive in due-time order; `resumeAt` is the earliest due time not known to be
  // checked: where the next run starts. It only moves back (a stop, a failure).
  let resumeAt = now;
  let position = windows.length > 0 ? Math.max(from, now - policy.livenessIntervalMs) : now;
  const connected = store.connectedIn(windows, Number.POSITIVE_INFINITY, (error) => {
    // A shard's read failed: what it had not returned yet is due at or after the position
    // reached in the merged order.
    recordFailure(result, error);
    resumeAt = Math.min(resumeAt, position);
  });
  const lanes = new Set<Promise<void>>();
  for await (const record of connected) {
    const dueAt = livenessDueAt(windows, record.connection?.connectedAt ?? Number.NaN) ?? position;
    position = dueAt;
    if (lanes.size >= concurrency) await Promise.race(lanes);
    if (outOfTime()) {
      result.stoppedEarly = true;
      resumeAt = Math.min(resumeAt, dueAt);
      break;
    }
    const lane = checkEntry(record, dueAt).finally(() => lanes.delete(lane));
    lanes.add(lane);
  }
  await Promise.all(lanes);
  // A run that stopped or failed leaves the mark where its unchecked entries begin (entries
  // checked again are only read again: a check writes nothing unless a holder is gone).
  if (!result.dryRun && (mark === undefined || resumeAt > mark)) {
    await store.setLivenessMark(resumeAt).catch((error: unknown) => recordFailure(result, error));
  }

  async function checkEntry(record: EntryRecord, dueAt: EpochMillis): Promise<void> {
    result.livenessChecked += 1;
    try {
      const answers = await checkHolders(
        liveness as ConnectionLiveness,
        holders(record),
        now,
        options.connectSettleMs ?? 0,
      );
      if (answers.unknown.length > 0) {
        result.livenessUnknown += answers.unknown.length;
        result.firstUnknown ??= answers.unknown[0]?.reason;
      }
      const gone = answers.gone;
      if (gone.length === 0) return;
      if (result.dryRun) {
        result.phantomsDropped += gone.length;
        return;
      }
      const outcome = await store.dropHolders(record.entry.metadata, gone, now);
      if (outcome !== 'unchanged') result.phantomsDropped += gone.length;
      if (outcome === 'disconnected') result.livenessDisconnected += 1;
    } catch (error) {
      recordFailure(result, error);
      resumeAt = Math.min(resumeAt, dueAt);
    }
  }
}

function recordFailure(result: SweepResult, error: unknown): void {
  result.failed += 1;
  result.firstFailure ??= error instanceof Error ? error.message : String(error);
}

function holders(record: EntryRecord): Holder[] {
  const connection = record.connection;
  return (connection?.connectionIds ?? []).map((connectionId) => ({
    connectionId,
    since: connection?.holderSince?.[connectionId],
  }));
}

function swept(record: EntryRecord): SweptEntry {
  const { namespace, name } = record.entry.metadata;
  return { namespace, name, reason: sweepReason(record) };
}
