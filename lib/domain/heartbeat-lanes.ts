import type { EpochMillis } from './model.ts';

/**
 * Heartbeat lanes: the held entries of the groups that set a heartbeat, divided among
 * `lanes` sweeper invocations that run side by side (each Lambda instance has its own CPU),
 * so a pass over 100,000 holders fits a bound one invocation cannot keep. Every held entry
 * belongs to exactly one lane, and each lane reads only its share:
 * - a group small enough for one lane goes whole to lane hash(namespace/group) mod lanes;
 * - a larger group is cut into `lanes` contiguous ranges of entry names at split points
 *   learned from the passes themselves (a pass samples every SAMPLE_EVERY-th name it reads);
 * - a group no pass has sampled yet goes whole to lane 0.
 * The plan changes only at a run boundary all lanes share (see nextPlan), so no two lanes of
 * one schedule tick work from different plans.
 */

/**
 * Lanes a stack may run: 5 s x 2 at 100,000 VMs needs about 16 (a pass every 5 s, ~6,400
 * checks a lane in that time: 32 in flight at 25 ms a call); more would only multiply the
 * invocations and the plan's reads.
 */
export const MAX_HEARTBEAT_LANES = 16;

/**
 * Every this-many-th name a pass reads is kept as a sample. 100,000 entries -> 4,000 names
 * (~160 KB over all the lanes' items), fine enough that a range is within ~25 entries of its
 * ideal size.
 */
export const SAMPLE_EVERY = 25;

/**
 * The most sampled names one lane's item keeps (~40 bytes each in its JSON: ~160 KB, well
 * inside DynamoDB's 400 KB item at any fleet size). Past it, the lane keeps every other sample
 * of every group, and its samples stand for twice as many names each (`every`): the split
 * points stay quantiles of the same names, a little coarser. Before, a lane's samples grew with
 * its share (one in 25 names: 4,000 names at 100,000 VMs, ~160 KB) and a lane of several
 * hundred thousand VMs could not write its item at all.
 */
export const MAX_LANE_SAMPLES = 4_000;

/** Every `k`-th name of a sorted list, from the first (k 1: all of them). */
export function thinned(names: readonly string[], k: number): string[] {
  return k <= 1 ? [...names] : names.filter((_, i) => i % k === 0);
}

/**
 * A lane's samples within MAX_LANE_SAMPLES: thinned by 2 as often as needed, with the number of
 * names each sample now stands for.
 */
export function boundedSamples(
  samples: GroupSamples,
  every: number,
): { samples: GroupSamples; every: number } {
  let bounded = samples;
  let stride = every;
  const count = (s: GroupSamples) => Object.values(s).reduce((sum, names) => sum + names.length, 0);
  while (count(bounded) > MAX_LANE_SAMPLES) {
    bounded = Object.fromEntries(
      Object.entries(bounded).map(([key, names]) => [key, thinned(names, 2)]),
    );
    stride *= 2;
  }
  return { samples: bounded, every: stride };
}

/** A lane carrying this much more than its even share makes the next plan rebalance. */
export const REBALANCE_AT = 1.25;

/** Entry names after `after` (exclusive) and at most `upTo` (inclusive). */
export interface LaneRange {
  after?: string;
  upTo?: string;
}

export interface LanePlan {
  /** Increases with every plan; a lane's cursor and samples belong to one version. */
  version: number;
  lanes: number;
  /** Runs whose time is at or after this use it. */
  from: EpochMillis;
  /** Groups (`<namespace>/<name>`) given whole to a lane. */
  whole: Record<string, number>;
  /** Groups cut into `lanes` ranges: the `lanes - 1` names that end ranges 0 .. lanes - 2. */
  cut: Record<string, string[]>;
}

/** The stored plan, and the one that replaces it from `next.from` (published ahead). */
export interface LanePlanRecord {
  current: LanePlan;
  next?: LanePlan;
}

/** Before any plan: one lane, every group whole in it. */
export const FIRST_PLAN: LanePlan = { version: 0, lanes: 1, from: 0, whole: {}, cut: {} };

/** Sampled names of each group (`<namespace>/<name>`), sorted. */
export type GroupSamples = Record<string, string[]>;

/** The plan a run at `now` works from. */
export function effectivePlan(record: LanePlanRecord | undefined, now: EpochMillis): LanePlan {
  if (!record) return FIRST_PLAN;
  return record.next && record.next.from <= now ? record.next : record.current;
}

/** FNV-1a, 32 bits: stable across releases and runtimes (a lane must find its groups). */
export function laneOfGroup(key: string, lanes: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % lanes;
}

/** Lane `lane`'s stretch of each group under `plan`: undefined when the group is not its. */
export function laneRangeOf(plan: LanePlan, lane: number, key: string): LaneRange | undefined {
  const splits = plan.cut[key];
  if (splits) {
    if (lane >= plan.lanes) return undefined;
    return {
      ...(lane > 0 ? { after: splits[lane - 1] } : {}),
      ...(lane < plan.lanes - 1 ? { upTo: splits[lane] } : {}),
    };
  }
  const owner = plan.whole[key] ?? 0;
  return owner === lane ? {} : undefined;
}

/** Whether `name` lies in `range`. */
export function inRange(name: string, range: LaneRange): boolean {
  return (
    (range.after === undefined || name > range.after) &&
    (range.upTo === undefined || name <= range.upTo)
  );
}

/** A group's samples with those in `range` replaced by a fresh read of that range. */
export function replaceRange(
  samples: readonly string[],
  range: LaneRange,
  fresh: readonly string[],
): string[] {
  return [...samples.filter((name) => !inRange(name, range)), ...fresh].sort();
}

/**
 * A plan from the samples: a group estimated (samples x SAMPLE_EVERY) above an even share is
 * cut at its samples' quantiles; the others go whole to their hash's lane; a group with no
 * samples is left out (lane 0 takes it whole and samples it).
 */
export function planFor(
  lanes: number,
  samples: GroupSamples,
  version: number,
  from: EpochMillis,
): LanePlan {
  const plan: LanePlan = { version, lanes, from, whole: {}, cut: {} };
  const total = Object.values(samples).reduce((sum, names) => sum + names.length, 0);
  const share = total / lanes;
  for (const [key, names] of Object.entries(samples)) {
    if (lanes > 1 && names.length > share && names.length >= lanes) {
      const sorted = [...names].sort();
      plan.cut[key] = Array.from(
        { length: lanes - 1 },
        (_, i) => sorted[Math.floor(((i + 1) * sorted.length) / lanes)] as string,
      );
    } else {
      plan.whole[key] = laneOfGroup(key, lanes);
    }
  }
  return plan;
}

/** Each lane's estimated holders under `plan`, from samples that stand for `every` names each. */
export function laneLoads(
  plan: LanePlan,
  samples: GroupSamples,
  every: number = SAMPLE_EVERY,
): number[] {
  const loads = Array.from({ length: plan.lanes }, () => 0);
  for (const [key, names] of Object.entries(samples)) {
    for (let lane = 0; lane < plan.lanes; lane++) {
      const range = laneRangeOf(plan, lane, key);
      if (range) loads[lane] = (loads[lane] ?? 0) + names.filter((n) => inRange(n, range)).length;
    }
  }
  return loads.map((count) => count * every);
}

/**
 * The plan lane 0 publishes now, or undefined to keep the current one. A new plan takes
 * effect half a sweep interval later (`from`): every lane's run of the next schedule tick
 * uses it, and every lane's run of this tick (started within half an interval of it) still
 * uses the current one, so at any tick the lanes' shares cover every entry once.
 *
 * Only from complete samples (`complete`: every lane finished a pass over its share under
 * the current plan), except when the number of lanes changed (the operator asked; the old
 * plan's shares no longer have a lane each). A new plan comes when a sampled group has no
 * place in the current one (a new group: lane 0 took it whole), or when a lane carries more
 * than REBALANCE_AT x an even share and the new plan carries less: groups that grow or
 * shrink move their split points, while a plan that fits is never churned.
 */
export function nextPlan(
  record: LanePlanRecord | undefined,
  lanes: number,
  samples: GroupSamples,
  complete: boolean,
  now: EpochMillis,
  sweepIntervalMs: number,
): LanePlan | undefined {
  if (record?.next && record.next.from > now) return undefined;
  const current = effectivePlan(record, now);
  const candidate = () => planFor(lanes, samples, current.version + 1, now + sweepIntervalMs / 2);
  if (current.lanes !== lanes) return candidate();
  if (lanes === 1 || !complete) return undefined;
  const unplaced = Object.keys(samples).some(
    (key) => current.whole[key] === undefined && current.cut[key] === undefined,
  );
  if (unplaced) return candidate();
  const loads = laneLoads(current, samples);
  const even = loads.reduce((sum, load) => sum + load, 0) / lanes;
  const heaviest = Math.max(...loads);
  if (heaviest <= REBALANCE_AT * even) return undefined;
  const next = candidate();
  return Math.max(...laneLoads(next, samples)) < heaviest ? next : undefined;
}
