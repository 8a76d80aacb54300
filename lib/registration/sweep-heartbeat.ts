import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { HeartbeatCursor, NameRange } from '../store/registry-store.ts';
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
  // Where the last run stopped, when its deadline cut a pass short: this run goes on from there.
  let cursor = await readCursor(store, result);
  const before = cursor;
  const started = elapsed();
  try {
    for (let pass = 1; ; pass++) {
      // Whole milliseconds: times are written to entries (disconnectedAt) and compared exactly.
      const now = options.now + Math.round(elapsed() - started);
      cursor = await onePass(store, options, result, groups, now, cursor);
      const next = pass * period;
      if (cursor || !repeat || next >= sweepIntervalMs) return;
      const wait = next - (elapsed() - started);
      if (wait > 0) await sleep(wait);
      if (outOfTime()) return;
    }
  } finally {
    if (!result.dryRun && !sameCursor(before, cursor)) {
      await store
        .saveHeartbeatCursor?.(cursor)
        .catch((error: unknown) => recordFailure(result, error));
    }
  }
}

async function readCursor(
  store: SweepStore,
  result: SweepResult,
): Promise<HeartbeatCursor | undefined> {
  try {
    return await store.heartbeatCursor?.();
  } catch (error) {
    // Unread, the pass starts over: every entry is still checked, only later.
    recordFailure(result, error);
    return undefined;
  }
}

function sameCursor(a: HeartbeatCursor | undefined, b: HeartbeatCursor | undefined): boolean {
  return a?.group === b?.group && a?.after === b?.after;
}

/** One stretch of a pass: a group's entries, or part of them by name. */
interface Stretch {
  key: string;
  range: NameRange;
}

/**
 * The pass's stretches, in order. Resuming, it starts in the group where the last pass stopped,
 * after the last entry it checked, goes through the other groups, and ends with that group's
 * entries up to where it began: every held entry once, however many runs a pass takes (at
 * 100,000 VMs one run covers less than half a pass). Else each pass starts at another group,
 * so a read that keeps failing in one does not starve the ones after it.
 */
function stretchesOf(
  groups: ReadonlyMap<string, GroupHeartbeat>,
  now: EpochMillis,
  cursor: HeartbeatCursor | undefined,
): Stretch[] {
  const keys = [...groups.keys()].sort();
  const resumeAt = cursor ? keys.indexOf(cursor.group) : -1;
  if (cursor && resumeAt >= 0) {
    const rest = [...keys.slice(resumeAt + 1), ...keys.slice(0, resumeAt)];
    return [
      { key: cursor.group, range: { after: cursor.after } },
      ...rest.map((key) => ({ key, range: {} })),
      { key: cursor.group, range: { upTo: cursor.after } },
    ];
  }
  const first = Math.floor(now / MIN_PASS_MS) % Math.max(1, keys.length);
  return [...keys.slice(first), ...keys.slice(0, first)].map((key) => ({ key, range: {} }));
}

/** One pass; the cursor where it stopped when the run's deadline cut it short. */
async function onePass(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
  groups: ReadonlyMap<string, GroupHeartbeat>,
  now: EpochMillis,
  resume: HeartbeatCursor | undefined,
): Promise<HeartbeatCursor | undefined> {
  const outOfTime = options.outOfTime ?? (() => false);
  const concurrency = options.livenessConcurrency ?? HEARTBEAT_CONCURRENCY;
  const heldEntriesOf = (group: ObjectRef, range: NameRange) =>
    (store.heldEntriesOf as NonNullable<SweepStore['heldEntriesOf']>)(group, range);
  const lanes = new Set<Promise<void>>();
  let stoppedAt: HeartbeatCursor | undefined;
  for (const { key, range } of stretchesOf(groups, now, resume)) {
    const slash = key.indexOf('/');
    const group: ObjectRef = { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
    // The last entry checked in this stretch; before any, where it began ('': the group's start).
    let last = range.after ?? '';
    let stopped = false;
    try {
      for await (const record of heldEntriesOf(group, range)) {
        if (lanes.size >= concurrency) await Promise.race(lanes);
        if (outOfTime()) {
          stopped = true;
          break;
        }
        const lane = checkEntryLiveness(record, { store, options, result, groups, now })
          .catch((error: unknown) => recordFailure(result, error))
          .finally(() => lanes.delete(lane));
        lanes.add(lane);
        last = record.entry.metadata.name;
      }
    } catch (error) {
      // One group's read failed: the others are still checked; the next pass reads it again.
      recordFailure(result, error);
    }
    if (stopped) {
      result.stoppedEarly = true;
      stoppedAt = { group: key, after: last };
      break;
    }
  }
  await Promise.all(lanes);
  return stoppedAt;
}

function elapsedSince(start: number): () => number {
  return () => performance.now() - start;
}
