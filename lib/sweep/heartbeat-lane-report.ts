import { logger, METRIC, recordByLane } from '../observability.ts';
import type { HeartbeatLaneReport, SweepResult } from '../registration/sweep-result.ts';

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
