import type { FleetMode } from '../domain/cell-mode.ts';
import type { DisruptionState, SweepMode } from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { sweepReason } from '../domain/sweep-policy.ts';

export interface SweptEntry {
  namespace: string;
  name: string;
  reason: 'disconnected' | 'stale';
}

/** What one sweeper run did: its deletion lane and its liveness lane fill it side by side. */
export interface SweepResult {
  /** Deleted (or, in a dry run, due and would be deleted). */
  deleted: SweptEntry[];
  /** Deletes that lost to a write landing after the read (a reconnect): the entry stays. */
  conflicts: number;
  /** Candidates the deletion lane took from the namespaces' queues (due or not, held or not). */
  candidatesRead: number;
  /** Namespaces that had due candidates this run (each got a fair share of the run). */
  namespacesWithDue: number;
  /** Connected entries whose holders were checked with API Gateway. */
  livenessChecked: number;
  /** Holders API Gateway said were gone, dropped (in a dry run: found). */
  phantomsDropped: number;
  /** Entries marked disconnected because every holder was gone. */
  livenessDisconnected: number;
  /** Holders API Gateway could not answer for (throttled, denied, unreachable): not dropped. */
  livenessUnknown: number;
  /** Holders open but silent past their heartbeat's bound, dropped (in a dry run: found). */
  silentDropped: number;
  /** The same, by namespace: the log line says whose VMs fell silent (a cut network, a hang). */
  silentByNamespace: Record<string, number>;
  /** Agents told their group's changed heartbeat (heartbeat-change notices sent). */
  heartbeatNotices: number;
  /** Notices that did not land (throttled, denied): the next pass tells them again. */
  heartbeatNoticesFailed: number;
  /** Silent connections whose close (DELETE @connections) failed; they hold nothing anyway. */
  silentCloseFailed: number;
  firstCloseFailure?: string;
  /** Why the first unknown answer was unknown, for the log line. */
  firstUnknown?: string;
  /** The run stopped at its deadline with work left. */
  stoppedEarly: boolean;
  /**
   * The deletion lane used its sweep interval with candidates left: the next run goes on,
   * its first round reading every namespace's queue again (not a deadline: nothing alarms).
   */
  intervalUsed: boolean;
  /**
   * Deletes, reads and liveness checks that failed (a store or API Gateway error the SDK's
   * retries did not get past). Each is isolated: the run goes on with the next entry, and the
   * next run tries the failed ones again. One throttled delete must not stop every other.
   */
  failed: number;
  /** The first failure's message, for the log line. */
  firstFailure?: string;
  dryRun: boolean;
  /**
   * With failStatic: the disruption this run saw, the mode of the run before, and the fleet's
   * word (lib/domain/cell-mode.ts) now and as the run before left it.
   */
  disruption?: DisruptionState & {
    previousMode: SweepMode | undefined;
    fleetMode: FleetMode;
    previousFleetMode: FleetMode | undefined;
  };
  /** Deletions held back, by cell (`<namespace>#<zone>`: the cell's entries away abnormally). */
  held: Record<string, number>;
  /** Due deletions deferred by a disrupted cell's secondary rate, by cell. */
  slowed: Record<string, number>;
  /** Deletions of abnormally departed entries made after a hold outlived its bound, by cell. */
  afterHoldBound: Record<string, number>;
  /** The heartbeat lane this run served, when heartbeat groups exist (sweep-heartbeat.ts). */
  heartbeat?: HeartbeatLaneReport;
}

/** What a run's heartbeat lane did: for its metrics and the warning to add lanes. */
export interface HeartbeatLaneReport {
  lane: number;
  /** The plan it worked from (lib/domain/heartbeat-lanes.ts) and the plan it published, if any. */
  planVersion: number;
  published?: number;
  /** Holders it checked (all its passes). */
  checked: number;
  /** Passes over its whole share that ended in this run, and how long each took (ms). */
  passesMs: number[];
  /**
   * The period of each of those passes (the shortest of its groups'): a pass longer than its
   * own period skipped a slot. Absent: every pass is held to `periodMs`.
   */
  passPeriodsMs?: number[];
  /** Holders it checked, by namespace (each tenant's share of the lane's work). */
  checkedByNamespace?: Record<string, number>;
  /**
   * Namespaces whose groups ask for more heartbeat checks a minute than their quota: their
   * periods are stretched by `stretch` (their own checks only; heartbeat-schedule.ts).
   */
  overQuota?: Record<string, { demand: number; quota: number; stretch: number }>;
  /** The shortest silence bound among the heartbeat groups. */
  shortestBoundMs: number;
  /**
   * How often a pass starts (half the shortest bound, 5 s to one interval): a pass over the
   * lane's share must take less, or its next slot is skipped and an entry waits twice as long.
   */
  periodMs: number;
  /** Lane 0: the lanes that have not run for two sweep intervals (their shares wait). */
  staleLanes?: number[];
}

export function emptyResult(dryRun: boolean): SweepResult {
  return {
    deleted: [],
    conflicts: 0,
    candidatesRead: 0,
    namespacesWithDue: 0,
    livenessChecked: 0,
    phantomsDropped: 0,
    livenessDisconnected: 0,
    livenessUnknown: 0,
    silentDropped: 0,
    silentByNamespace: {},
    silentCloseFailed: 0,
    heartbeatNotices: 0,
    heartbeatNoticesFailed: 0,
    stoppedEarly: false,
    intervalUsed: false,
    failed: 0,
    dryRun,
    held: {},
    slowed: {},
    afterHoldBound: {},
  };
}

export function recordFailure(result: SweepResult, error: unknown): void {
  result.failed += 1;
  result.firstFailure ??= error instanceof Error ? error.message : String(error);
}

export function countIn(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by;
}

export function swept(record: EntryRecord): SweptEntry {
  const { namespace, name } = record.entry.metadata;
  return { namespace, name, reason: sweepReason(record) };
}
