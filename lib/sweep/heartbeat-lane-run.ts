import { logger, METRIC, recordCount } from '../observability.ts';
import { runHeartbeatLane } from '../registration/sweep.ts';
import { reportHeartbeatLane } from './heartbeat-lane-report.ts';
import { underLaneLease } from './sweep-lease.ts';
import {
  laneOptions,
  type SweeperInvocation,
  type SweepRunDependencies,
} from './sweep-run-dependencies.ts';
import { EMPTY_SUMMARY, heartbeatOf, type SweeperSummary } from './sweeper-summary.ts';

/**
 * Heartbeat lane k's tick (1 .. n-1): under the lane's own lease (two invocations of one lane
 * never overlap; the sweep's lease, lane 0's, is never taken, so no lane delays a deletion),
 * the heartbeat passes over its share for one sweep interval. A failure fails this invocation
 * (the sweeper's error alarm) and delays only this lane's share: its next run resumes from its
 * last cursor.
 */
export function runHeartbeatLaneTick(
  deps: SweepRunDependencies,
  invocation: SweeperInvocation,
): Promise<SweeperSummary> {
  const { lane } = invocation;
  return underLaneLease(deps, invocation, {
    skipped: () => ({ ...EMPTY_SUMMARY, mode: 'skipped', heartbeat: idle(lane) }),
    run: async (startedAt) => {
      const result = await runHeartbeatLane(deps.store, {
        ...laneOptions(deps, invocation, startedAt),
        heartbeatLane: lane,
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
    },
  });
}

/** A lane that checked nothing (no heartbeat groups, or another invocation held its lease). */
function idle(lane: number): NonNullable<SweeperSummary['heartbeat']> {
  return { lane, planVersion: 0, checked: 0, passesMs: [] };
}
