import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How a new entry and a group's deletion meet without `$connect` reading the group twice.
 *
 * `delete wg` deletes the group, then the entries it registered. A connect that read the group
 * before the deletion and wrote its entry after the cascade listed the entries would leave an
 * entry its group never takes along. Both sides measure durations on their own monotonic
 * clock (no clock agreement is needed):
 *
 * - `$connect` times its work from before it sends the group read until its entry write has
 *   answered. Within GROUP_READ_WINDOW_MS, the write landed less than the window after the read
 *   was served, so less than the window after any deletion the read did not see. Only a
 *   slower connect (a retried request, a loaded machine) reads the group again after creating,
 *   and takes its entry back when the group is gone.
 * - The cascade lists the entries no sooner than GROUP_READ_WINDOW_MS after the deletion
 *   answered, so every entry of a fast connect that read the group before is in its listing.
 *
 * The rule it keeps: an entry never outlives a group deleted while it registered. What it
 * costs: `delete wg` (and a removal of a group deleted in the cluster) takes the window longer;
 * a new entry costs one request less (docs/benchmarks.md).
 */
export const GROUP_READ_WINDOW_MS = 2_000;

/** A monotonic clock in milliseconds (a process's own; never compared across processes). */
export type MonotonicClock = () => number;

export const monotonicNow: MonotonicClock = () => performance.now();

/** Whether a connect that started at `readStartedAt` and has written by now was fast enough. */
export function withinGroupReadWindow(readStartedAt: number, clock: MonotonicClock): boolean {
  return clock() - readStartedAt <= GROUP_READ_WINDOW_MS;
}

/** The cascade's side: waits out the window after the group's deletion answered. */
export async function waitOutGroupReads(
  deletedAt: number,
  clock: MonotonicClock = monotonicNow,
  wait: (ms: number) => Promise<unknown> = sleep,
): Promise<void> {
  const left = deletedAt + GROUP_READ_WINDOW_MS - clock();
  if (left > 0) await wait(left);
}
