import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import { checkEntryLiveness } from './entry-liveness-check.ts';
import { type GroupHeartbeat, shortestBoundMs } from './heartbeat-groups.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import { recordFailure, type SweepResult } from './sweep-result.ts';

/** Passes of one run are at least this far apart: each reads every heartbeat group's entries. */
export const MIN_PASS_MS = 5_000;
/** Checks of the heartbeat lane in flight at once (beside the windows lane's own). */
export const HEARTBEAT_CONCURRENCY = 32;

/**
 * How far apart one run's passes over the heartbeat groups are: half the shortest bound (so a
 * connection silent just past its bound is found within half a bound more), at least
 * MIN_PASS_MS, at most the sweep interval (one pass a run).
 * 30 s bound (10 s x 3) -> 15 s; 5 min x 2 -> one pass a minute.
 */
export function passPeriodMs(shortestMs: number, sweepIntervalMs: number): number {
  return Math.min(sweepIntervalMs, Math.max(MIN_PASS_MS, Math.floor(shortestMs / 2)));
}

/**
 * The heartbeat lane of a run: every held entry of every group that sets a heartbeat, checked
 * each pass (a Query of the group's entries: reads proportional to those groups' entries, the
 * price the operator chose). With `repeatHeartbeatPasses` (the sweeper function) a run makes
 * a pass every passPeriodMs until its sweep interval is over or its deadline is near, so a
 * bound shorter than the schedule's one minute is still met; otherwise (a dry run, a manual
 * sweep) one pass. Each pass's time is the run's `now` plus the time elapsed since it began.
 */
export async function checkHeartbeatGroups(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
  groups: ReadonlyMap<string, GroupHeartbeat>,
): Promise<void> {
  const shortest = shortestBoundMs(groups);
  const sweepIntervalMs = options.policy.sweepIntervalMs;
  if (shortest === undefined || !store.heldEntriesOf || !sweepIntervalMs) return;
  const outOfTime = options.outOfTime ?? (() => false);
  const elapsed = options.elapsedMs ?? elapsedSince(performance.now());
  const sleep = options.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  const period = passPeriodMs(shortest, sweepIntervalMs);
  const repeat = options.repeatHeartbeatPasses === true && !result.dryRun;
  const started = elapsed();
  for (let pass = 1; ; pass++) {
    // Whole milliseconds: times are written to entries (disconnectedAt) and compared exactly.
    const now = options.now + Math.round(elapsed() - started);
    await onePass(store, options, result, groups, now);
    const next = pass * period;
    if (!repeat || next >= sweepIntervalMs) return;
    const wait = next - (elapsed() - started);
    if (wait > 0) await sleep(wait);
    if (outOfTime()) return;
  }
}

async function onePass(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
  groups: ReadonlyMap<string, GroupHeartbeat>,
  now: EpochMillis,
): Promise<void> {
  const outOfTime = options.outOfTime ?? (() => false);
  const concurrency = options.livenessConcurrency ?? HEARTBEAT_CONCURRENCY;
  const lanes = new Set<Promise<void>>();
  // Each pass starts at another group: a pass that runs out of time does not leave the same
  // groups unchecked run after run.
  const keys = [...groups.keys()];
  const first = Math.floor(now / MIN_PASS_MS) % Math.max(1, keys.length);
  for (const key of [...keys.slice(first), ...keys.slice(0, first)]) {
    const slash = key.indexOf('/');
    const group: ObjectRef = { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
    try {
      for await (const record of (store.heldEntriesOf as NonNullable<SweepStore['heldEntriesOf']>)(
        group,
      )) {
        if (lanes.size >= concurrency) await Promise.race(lanes);
        if (outOfTime()) {
          result.stoppedEarly = true;
          break;
        }
        const lane = checkEntryLiveness(record, { store, options, result, groups, now })
          .catch((error: unknown) => recordFailure(result, error))
          .finally(() => lanes.delete(lane));
        lanes.add(lane);
      }
    } catch (error) {
      // One group's read failed: the others are still checked; the next pass reads it again.
      recordFailure(result, error);
    }
  }
  await Promise.all(lanes);
}

function elapsedSince(start: number): () => number {
  return () => performance.now() - start;
}
