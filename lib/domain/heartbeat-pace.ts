/**
 * How often the sweeper checks each heartbeat group's VMs, and what a namespace's groups ask
 * of it (issue 44: each tenant paces and pays for its own checks only). Pure: counts and
 * times are arguments.
 *
 * A group is checked every half of the shortest bound its holders are held to (its own
 * setting, or an older one a holder was told and has not yet acknowledged the change of): a
 * connection silent just past its bound is found within half a bound more. Before, every
 * group was checked at half the shortest bound of any group of any namespace: one VM of a
 * `5s x 2` group in namespace `evil` made `shop`'s 40 VMs of `60s x 3` be checked 12 times a
 * run instead of once.
 */

/** Passes over a group are at least this far apart (each reads every held entry of it). */
export const MIN_PASS_MS = 5_000;

/**
 * How far apart a group's passes are: half the bound (so a connection silent just past its
 * bound is found within half a bound more), at least MIN_PASS_MS, at most the sweep interval
 * (once a run). 30 s bound (10 s x 3) -> 15 s; 5 min x 2 -> once a run.
 */
export function passPeriodMs(boundMs: number, sweepIntervalMs: number): number {
  return Math.min(sweepIntervalMs, Math.max(MIN_PASS_MS, Math.floor(boundMs / 2)));
}

/**
 * One group's period: from the shorter of its setting's bound and the shortest bound a holder
 * of it was last seen held to (a holder told an older, shorter setting keeps it until it
 * acknowledges the change or reconnects), stretched by its namespace's quota (at most once a
 * run: never slower than the sweep interval).
 */
export function groupPeriodMs(
  settingBoundMs: number,
  heldShortestMs: number | undefined,
  sweepIntervalMs: number,
  stretch = 1,
): number {
  const bound = Math.min(settingBoundMs, heldShortestMs ?? settingBoundMs);
  const period = passPeriodMs(bound, sweepIntervalMs);
  return Math.min(sweepIntervalMs, Math.ceil(period * Math.max(1, stretch)));
}

/**
 * Checks a minute of one held VM checked every `periodMs`: 60 s / period, rounded up (12 at
 * 5 s, 4 at 15 s, 1 at 60 s). An upper bound: on AWS a run's passes end 45 s into its minute
 * (9 passes at 5 s, not 12), and a pass that overruns its period skips a slot.
 */
export function checksPerMinute(periodMs: number): number {
  return Math.ceil(60_000 / periodMs);
}

/**
 * The default quota of heartbeat checks a minute a namespace may ask for: 100,000 VMs (one
 * region's whole fleet) of the shortest setting (5 s x 2: 12 a minute), so no fleet a region
 * can hold meets it; an operator sets a real one per tenant (`registrar namespace set
 * --heartbeat-checks`).
 */
export const DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE = 1_200_000;

/** One group of a namespace as the quota counts it: its held VMs and its period. */
export interface GroupDemand {
  group: string;
  held: number;
  periodMs: number;
}

/** The heartbeat checks a minute a namespace's groups ask for: held VMs x checks a minute each. */
export function demandPerMinute(groups: readonly GroupDemand[]): number {
  return groups.reduce((sum, g) => sum + g.held * checksPerMinute(g.periodMs), 0);
}

/**
 * By how much a namespace over its quota has its groups' periods stretched, so its checks a
 * minute come back within it: demand / quota (1 within it). Only its own groups: another
 * namespace's pace and count never change (DESIGN: fair shares).
 */
export function quotaStretch(demand: number, quota: number): number {
  return demand > quota && quota > 0 ? demand / quota : 1;
}
