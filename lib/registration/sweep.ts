import { recordedWithTime, recordRefresher } from './heartbeat-groups.ts';
import { deleteDue } from './sweep-deletions.ts';
import { checkHeartbeatGroups } from './sweep-heartbeat.ts';
import { checkLiveness } from './sweep-liveness.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import { emptyResult, recordFailure, type SweepResult } from './sweep-result.ts';

export { LIVENESS_CONCURRENCY } from './sweep-liveness.ts';
export type { SweepOptions, SweepStore } from './sweep-options.ts';
export type { SweepResult, SweptEntry } from './sweep-result.ts';

/**
 * One sweeper run: two lanes side by side for the whole run.
 * - Deletions (sweep-deletions.ts): entries disconnected past the grace period, and stale
 *   ones, each namespace served in turn from its own queue, paced, fail static applied.
 * - Liveness (sweep-liveness.ts): the holders of the connected entries due for a check, asked
 *   of API Gateway, 32 at a time.
 * Neither waits for the other, so a backlog of deletions of any size never takes the liveness
 * checks' time: they keep the whole run (a guaranteed share), as the deletions do; both stop
 * before the deadline, and the next run goes on where each stopped.
 */
export async function runSweep(store: SweepStore, options: SweepOptions): Promise<SweepResult> {
  const result = emptyResult(options.dryRun ?? false);
  await Promise.all([deleteDue(store, options, result), checkLiveness(store, options, result)]);
  return result;
}

/**
 * One run of heartbeat lane `options.heartbeatLane` (1 .. heartbeatLanes - 1): only the
 * heartbeat passes over its share (lib/domain/heartbeat-lanes.ts), no deletions, no liveness
 * windows, no listing of the groups (it follows lane 0's record of them). A failure is this
 * lane's alone: the other lanes' shares and lane 0's sweep go on.
 */
export async function runHeartbeatLane(
  store: SweepStore,
  options: SweepOptions,
): Promise<SweepResult> {
  const result = emptyResult(options.dryRun ?? false);
  if (!options.liveness) return result;
  const recorded = await recordedWithTime(store).catch((error: unknown) => {
    recordFailure(result, error);
    return undefined;
  });
  if (recorded) {
    const refresh = recordRefresher(store, recorded.listedAt);
    await checkHeartbeatGroups(store, options, result, recorded.groups, refresh);
  }
  return result;
}
