import type { EpochMillis } from '../domain/model.ts';
import type { LivenessPolicy, SweepPolicy } from '../domain/sweep-policy.ts';
import type { EntryLifecycleStore } from './entry-lifecycle-store.ts';
import type { FailStaticPolicy } from './fail-static-guard.ts';
import type { HeartbeatStore } from './heartbeat-store.ts';
import type { ConnectionLiveness } from './liveness.ts';
import type {
  DepartureStore,
  DisruptionStore,
  LivenessMarkStore,
  SweepIndexStore,
} from './sweep-store.ts';

// What a sweeper run is given; both lanes (sweep-deletions.ts, sweep-liveness.ts) read it, so it
// lives below them and sweep.ts, which composes the lanes.

export interface SweepOptions {
  now: EpochMillis;
  policy: SweepPolicy & Partial<LivenessPolicy>;
  /** Most deletions one run attempts; the next run (a minute later) continues. */
  maxDeletes: number;
  /**
   * Most candidates one run takes from the namespaces' queues, deleted or skipped (held,
   * slowed, not due after all); shared fairly like the deletions. Default 2 x maxDeletes.
   */
  maxCandidates?: number;
  /**
   * Deletions per second, all namespaces together (each gets its share), so a mass expiry
   * does not flood the mesh with endpoint removals.
   */
  deletesPerSecond: number;
  /** Report what would be deleted, delete nothing (`registrar sweep --dry-run`). */
  dryRun?: boolean;
  /** Injected so tests pace deletions without waiting; real timers by default. */
  sleep?: (ms: number) => Promise<void>;
  /**
   * The time as the run goes on (`now` is when it started), for the deletion lane's budget of
   * one sweep interval; the real clock by default. A test's `sleep` advances it.
   */
  clock?: () => EpochMillis;
  /**
   * True once the run must stop (its invocation is near its deadline). Checked before every
   * candidate and every liveness check, so a mass expiry ends the run early, never in a
   * timeout; what is left is due again on the next run.
   */
  outOfTime?: () => boolean;
  /** With a liveness policy: check connected entries' holders; absent, no checks. */
  liveness?: ConnectionLiveness;
  /** A holder younger than this may still be in its `$connect` (see checkHolders). */
  connectSettleMs?: number;
  /** Liveness checks in flight at once; default LIVENESS_CONCURRENCY. */
  livenessConcurrency?: number;
  /**
   * Closes a connection found silent past its heartbeat (DELETE @connections/{id}); absent,
   * it is only dropped as a holder (it holds nothing, and is told so if it speaks again).
   */
  closeConnection?: (connectionId: string) => Promise<unknown>;
  /**
   * Tells a live agent its group's changed heartbeat (POST @connections/{id}: a
   * `heartbeat-change` notice, lib/protocol/heartbeat-notice.ts); absent, no agent is told and
   * each keeps the bound it was told until it reconnects.
   */
  notifyConnection?: (
    connectionId: string,
    notice: unknown,
  ) => Promise<'sent' | 'gone' | { failed: string }>;
  /**
   * Several passes over the heartbeat groups in one run, every half of the shortest bound,
   * until the sweep interval is over (sweep-heartbeat.ts); the sweeper function sets it.
   */
  repeatHeartbeatPasses?: boolean;
  /**
   * Heartbeat lanes (lib/domain/heartbeat-lanes.ts): how many the stack runs (default 1), and
   * which one this run is (default 0: the scheduled sweep, which also plans the lanes' shares).
   */
  heartbeatLanes?: number;
  heartbeatLane?: number;
  /**
   * When the schedule meant this run to start (the event's `time`): the lanes pick their plan
   * of the shares by it, not by when their invocation began, so a lane delivered late (more
   * than half an interval: a throttled or retried invocation) still works from its tick's plan
   * and the lanes of one tick cover every entry once. Default `now`.
   */
  tickAt?: EpochMillis;
  /** Injected so tests move the passes' clock; milliseconds since the run began by default. */
  elapsedMs?: () => number;
  /**
   * Fail static (lib/domain/disruption.ts): pace, slow or hold the deletions of abnormally
   * departed entries by the zones' disruption. Absent: every due entry at the normal rate
   * (a manual sweep with explicit flags, tests of the plain rules). Needs a DisruptionStore.
   */
  failStatic?: FailStaticPolicy;
}

/**
 * What the sweep needs from storage: the sweep index and departure queues it reads and deletes
 * from, the holders it drops, its liveness mark, fail static's record, and the heartbeat lanes.
 */
export type SweepStore = Pick<SweepIndexStore, 'sweepCandidates' | 'deleteSwept' | 'connectedIn'> &
  Pick<DepartureStore, 'sweepNamespaces' | 'departuresOf'> &
  Pick<EntryLifecycleStore, 'dropHolders'> &
  LivenessMarkStore &
  DisruptionStore &
  HeartbeatStore;
