import type { Context } from 'aws-lambda';
import { InvalidRequestError } from '../lib/domain/errors.ts';
import { logger, METRIC, recordByLane, recordCount } from '../lib/observability.ts';
import { runHeartbeatLane, type SweepResult } from '../lib/registration/sweep.ts';
import type { HeartbeatLaneReport } from '../lib/registration/sweep-result.ts';
import type { SweeperDependencies } from '../lib/wiring/sweeper.ts';
import { EMPTY_SUMMARY, heartbeatOf, type SweeperSummary } from './sweeper-summary.ts';

/**
 * What the schedule sends heartbeat lane k (1 .. n-1); lane 0's event is the plain tick. `time`:
 * when the rule fired (EventBridge's `<aws.events.event.time>`), so a lane delivered late picks
 * its tick's plan (SweepOptions.tickAt); absent (a rule of an older stack), its start.
 */
export interface HeartbeatLaneEvent {
  heartbeatLane: number;
  time?: string;
}

/**
 * The scheduled time an event names (`time`), when it is a time within one interval before
 * `now`; else `now` (a manual invoke, a rule without it, a time that cannot be the tick's).
 */
export function tickOf(event: unknown, now: number, intervalMs: number): number {
  const text = (event as { time?: unknown } | null)?.time;
  const at = typeof text === 'string' ? Date.parse(text) : Number.NaN;
  return Number.isFinite(at) && at <= now && now - at <= intervalMs ? at : now;
}

/**
 * The lane an event names: 0 for the schedule's plain tick (or a manual invoke with `{}`),
 * else `heartbeatLane`, which must be a whole number from 1 to lanes - 1 (a rule left from a
 * stack that had more lanes, or a hand-made invoke, is refused, not run as some lane).
 */
export function laneOf(event: unknown, lanes: number): number {
  const given = (event as { heartbeatLane?: unknown } | null)?.heartbeatLane;
  if (given === undefined) return 0;
  if (typeof given !== 'number' || !Number.isInteger(given) || given < 1 || given >= lanes) {
    throw new InvalidRequestError(
      `invalid sweeper event: heartbeatLane (value '${String(given)}') must be a whole number from 1 to ${lanes - 1} (this stack runs ${lanes} heartbeat lane(s); lane 0 is the plain schedule tick)`,
    );
  }
  return given;
}

/**
 * One invocation of heartbeat lane `lane`: under the lane's own lease (two invocations of one
 * lane never overlap; the sweep's lease, lane 0's, is never taken), the heartbeat passes over
 * its share for one sweep interval. A failure fails this invocation (the sweeper's error
 * alarm) and delays only this lane's share: its next run resumes from its last cursor.
 */
export async function runLane(
  deps: SweeperDependencies,
  lane: number,
  context: Context,
  deadlineMarginMs: number,
  tickAt?: number,
): Promise<SweeperSummary> {
  const holder = context.awsRequestId;
  const startedAt = deps.now();
  const { sweep } = deps.config;
  const leaseMs = Math.min(context.getRemainingTimeInMillis(), sweep.sweepIntervalMs);
  const lease = await deps.store.acquireSweepLease(holder, startedAt, startedAt + leaseMs, lane);
  if (!lease.acquired) {
    logger.info('this heartbeat lane is still running; this tick skips', {
      heartbeatLane: lane,
      holder: lease.holder,
      until: new Date(lease.until).toISOString(),
    });
    return { ...EMPTY_SUMMARY, mode: 'skipped', heartbeat: idle(lane) };
  }
  try {
    const result = await runHeartbeatLane(deps.store, {
      now: startedAt,
      policy: sweep,
      maxDeletes: 0,
      deletesPerSecond: sweep.deletesPerSecond,
      outOfTime: () => context.getRemainingTimeInMillis() < deadlineMarginMs,
      liveness: deps.liveness,
      closeConnection: deps.closeConnection,
      notifyConnection: deps.notifyConnection,
      repeatHeartbeatPasses: true,
      connectSettleMs: deps.config.connectSettleMs,
      heartbeatLanes: deps.config.heartbeatLanes,
      heartbeatLane: lane,
      ...(tickAt === undefined ? {} : { tickAt }),
    });
    recordCount(METRIC.silentHolders, result.silentDropped);
    recordCount(METRIC.livenessUnknown, result.livenessUnknown);
    reportHeartbeatLane(result);
    const summary: SweeperSummary = {
      ...EMPTY_SUMMARY,
      mode: 'lane',
      livenessChecked: result.livenessChecked,
      livenessUnknown: result.livenessUnknown,
      phantomsDropped: result.phantomsDropped,
      silentDropped: result.silentDropped,
      stoppedEarly: result.stoppedEarly,
      failed: result.failed,
      heartbeat: result.heartbeat ? heartbeatOf(result).heartbeat : idle(lane),
    };
    if (result.failed > 0) {
      logger.error('heartbeat lane finished with failures; its next run retries them', {
        ...summary,
        reason: result.firstFailure,
      });
      throw new Error(
        `heartbeat lane ${lane}: ${result.failed} operation(s) failed and are retried by its next run: ${result.firstFailure ?? 'unknown error'}`,
      );
    }
    logger.info('heartbeat lane finished', { ...summary });
    return summary;
  } finally {
    await deps.store.releaseSweepLease(holder, lane).catch((error: unknown) => {
      logger.warn('could not release the heartbeat lane lease; it runs out at the deadline', {
        heartbeatLane: lane,
        reason: error instanceof Error ? error.message : String(error),
      });
    });
  }
}

/**
 * A lane's metrics (by `Lane`), and the operator's signal to add lanes: a warning when a pass
 * over the lane's share took longer than the pass period (half the shortest bound). The
 * design first warned past the bound itself; measured at 100,000 VMs of 10 s x 3 on 6 lanes,
 * passes of 18.8 s stayed under the 30 s bound while each overran its 15 s period, so every
 * other pass slot was skipped and the worst detection went from 61 s to 91 s with no warning
 * (docs/benchmarks.md, "Heartbeat lanes at 100,000"). Lane 0 reports through this too.
 */
export function reportHeartbeatLane(result: SweepResult): void {
  if (result.heartbeatNotices > 0 || result.heartbeatNoticesFailed > 0) {
    // Each pass tells again the agents that have not acknowledged: a count that stays up over
    // runs names agents that take notices but do not answer them.
    logger.info("told live agents their group's changed heartbeat", {
      told: result.heartbeatNotices,
      failed: result.heartbeatNoticesFailed,
    });
  }
  const report = result.heartbeat;
  if (!report) return;
  recordByLane(METRIC.heartbeatChecks, report.lane, report.checked);
  // Each pass against its own period (the shortest of the groups it served).
  const late = report.passesMs.filter(
    (ms, i) => ms > (report.passPeriodsMs?.[i] ?? report.periodMs),
  );
  for (const ms of report.passesMs) {
    recordByLane(METRIC.heartbeatPassSeconds, report.lane, ms / 1000, 'Seconds');
  }
  recordByLane(METRIC.heartbeatPassesLate, report.lane, late.length);
  if (report.published !== undefined) {
    logger.info('heartbeat lanes: a new plan of the shares takes effect from the next tick', {
      heartbeatLane: report.lane,
      plan: report.published,
    });
  }
  if (late.length > 0) warnLate(report, late);
  if (report.overQuota) {
    // Only these namespaces' checks are slowed: every other tenant's pace is its own.
    logger.warn(
      `heartbeat checks of ${Object.keys(report.overQuota).join(', ')} are over their namespace's quota: their groups are checked less often (their VMs found silent later), no other namespace's`,
      { heartbeatLane: report.lane, overQuota: report.overQuota },
    );
  }
  if (report.staleLanes) {
    logger.warn(
      `heartbeat lanes ${report.staleLanes.join(', ')} have not run for two sweep intervals; their shares of the heartbeat groups are checked only by the liveness interval until they do`,
      { staleLanes: report.staleLanes },
    );
  }
}

function warnLate(report: HeartbeatLaneReport, late: number[]): void {
  const slowest = Math.max(...late);
  logger.warn(
    `heartbeat lane ${report.lane}: a pass over its share took ${seconds(slowest)}, longer than its period ${seconds(report.periodMs)} (half the shortest heartbeat bound ${seconds(report.shortestBoundMs)}); add heartbeat lanes (heartbeatLanes) or lengthen the bound`,
    {
      heartbeatLane: report.lane,
      passesMs: report.passesMs,
      periodMs: report.periodMs,
      shortestBoundMs: report.shortestBoundMs,
      checked: report.checked,
    },
  );
}

/** `18.8s`, `15s`: a pass's time to a tenth of a second (formatDuration would say 18s800ms). */
function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))}s`;
}

/** A lane that checked nothing (no heartbeat groups, or another invocation held its lease). */
function idle(lane: number): NonNullable<SweeperSummary['heartbeat']> {
  return { lane, planVersion: 0, checked: 0, passesMs: [] };
}
