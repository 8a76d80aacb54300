import {
  boundedSamples,
  effectivePlan,
  FIRST_PLAN,
  type GroupSamples,
  inRange,
  type LanePlan,
  type LanePlanRecord,
  laneRangeOf,
  nextPlan,
  replaceRange,
  SAMPLE_EVERY,
  thinned,
} from '../domain/heartbeat-lanes.ts';
import type { ObjectRef } from '../domain/model.ts';
import type { ShareGroup, StretchRead } from './heartbeat-flows.ts';
import { type GroupHeartbeat, groupKeyOf } from './heartbeat-groups.ts';
import { combinedObservations } from './heartbeat-schedule.ts';
import type { HeartbeatLaneState, HeldObservation } from './heartbeat-store.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import { recordFailure, type SweepResult } from './sweep-result.ts';

/** One run of one heartbeat lane: its plan, its share, and its state as the run changes it. */
export interface LaneRun {
  lane: number;
  plan: LanePlan;
  /** The plan lane 0 published this run (effective from a later run), if any. */
  published?: number;
  share: ShareGroup[];
  state: HeartbeatLaneState;
  /** Samples are kept only with more than one lane (they serve the plan alone). */
  sampling: boolean;
  /** Lane 0 with several lanes: the lanes whose item says they have not run lately. */
  stale?: number[];
  /** Every lane's last observation of its groups, summed (heartbeat-schedule.ts). */
  observed: Record<string, HeldObservation>;
}

/**
 * Opens lane `options.heartbeatLane` (0 by default) for a run: reads its plan and its own
 * item; lane 0 with several lanes also reads every lane's item and publishes the next plan
 * when the samples call for one (nextPlan). A lane whose item was written under an older
 * plan starts that plan afresh (no cursor, no samples). With several lanes, a failed read
 * skips this run's heartbeat passes of this lane only (the next run reads again); with one,
 * its share starts over, as before lanes.
 */
export async function openLane(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
  groups: ReadonlyMap<string, GroupHeartbeat>,
): Promise<LaneRun | undefined> {
  const lane = options.heartbeatLane ?? 0;
  const lanes = options.heartbeatLanes ?? 1;
  // The plan of the tick this run belongs to (see SweepOptions.tickAt).
  const tick = options.tickAt ?? options.now;
  const multi = lanes > 1 || lane > 0;
  let plan: LanePlan = FIRST_PLAN;
  let published: number | undefined;
  let stored: HeartbeatLaneState | undefined;
  let stale: number[] | undefined;
  let others: HeartbeatLaneState[] = [];
  try {
    if (!multi) {
      stored = await store.heartbeatLane(0);
    } else if (lane === 0) {
      const [record, states] = await Promise.all([store.heartbeatPlan(), store.heartbeatLanes()]);
      stored = states.get(0);
      others = [...states].filter(([at]) => at !== 0).map(([, state]) => state);
      stale = staleLanes(states, effectivePlan(record, tick), options);
      // A plan published now takes effect from a later run (its `from`), not this one.
      published = (await publishPlan(store, options, record, states, groups))?.version;
      plan = effectivePlan(record, tick);
    } else {
      // The other lanes' items too: a namespace's pace against its quota is set by its whole
      // fleet, which the lanes read in shares (heartbeat-schedule.ts). Not needed to run: a
      // failed read of them paces by this lane's own share alone.
      const [record, own, states] = await Promise.all([
        store.heartbeatPlan(),
        store.heartbeatLane(lane),
        store.heartbeatLanes().catch(() => undefined),
      ]);
      plan = effectivePlan(record, tick);
      stored = own;
      others = [...(states ?? [])].filter(([at]) => at !== lane).map(([, state]) => state);
    }
  } catch (error) {
    recordFailure(result, error);
    if (multi) return undefined;
  }
  const state: HeartbeatLaneState =
    stored && stored.planVersion === plan.version
      ? stored
      : {
          planVersion: plan.version,
          cursors: {},
          complete: false,
          samples: {},
          // What the lane saw of its groups still paces them under the new plan.
          ...(stored?.held ? { held: stored.held } : {}),
        };
  return {
    lane,
    plan,
    ...(published === undefined ? {} : { published }),
    share: shareOf(plan, lane, groups),
    state,
    sampling: multi,
    ...(stale ? { stale } : {}),
    observed: combinedObservations([state, ...others]),
  };
}

/**
 * A stretch the pass read: its samples replace the ones of that range, thinned to the lane's
 * stride (a pass samples one name in SAMPLE_EVERY; a lane whose item grew past
 * MAX_LANE_SAMPLES keeps fewer), so every sample of the lane stands for as many names.
 */
export function recordStretch(run: LaneRun, read: StretchRead): void {
  if (!run.sampling) return;
  const key = groupKeyOf(read.group.namespace, read.group.name);
  const k = Math.round((run.state.sampleEvery ?? SAMPLE_EVERY) / SAMPLE_EVERY);
  run.state.samples[key] = replaceRange(
    run.state.samples[key] ?? [],
    read.range,
    thinned(read.samples, k),
  );
}

/**
 * Writes the lane's item, every run (its `ranAt` tells lane 0 it runs), keeping only samples
 * of its current share (a group that left it, or dropped its heartbeat, is no longer its to
 * report). A failed write is a failure of this lane's run: its next run resumes from the
 * cursor it last wrote.
 */
export async function saveLane(store: SweepStore, run: LaneRun, result: SweepResult) {
  if (result.dryRun) return;
  const samples: GroupSamples = {};
  const held: Record<string, HeldObservation> = {};
  for (const { ref, range } of run.share) {
    const key = groupKeyOf(ref.namespace, ref.name);
    const names = run.state.samples[key];
    if (names) samples[key] = names.filter((name) => inRange(name, range));
    const seen = run.state.held?.[key];
    if (seen) held[key] = seen;
  }
  // The item stays the same size whatever the lane's share: past MAX_LANE_SAMPLES its samples
  // are thinned (each then stands for more names).
  const bounded = boundedSamples(samples, run.state.sampleEvery ?? SAMPLE_EVERY);
  run.state.samples = bounded.samples;
  run.state.sampleEvery = bounded.every;
  await store
    .saveHeartbeatLane(run.lane, { ...run.state, samples: bounded.samples, held })
    .catch((error: unknown) => recordFailure(result, error));
}

/**
 * Lanes 1 .. n-1 of the plan in effect that have not written their item for two sweep
 * intervals: their invocations fail or do not start (a rule deleted by hand, a throttled
 * function), so their shares go unchecked but by the liveness windows. A lane that never
 * wrote counts once the plan has been in effect that long (right after a deploy that adds
 * lanes, their first runs race this one). Lane 0's log names them.
 */
function staleLanes(
  states: ReadonlyMap<number, HeartbeatLaneState>,
  plan: LanePlan,
  options: SweepOptions,
): number[] {
  const since = options.now - 2 * (options.policy.sweepIntervalMs ?? 60_000);
  const stale: number[] = [];
  for (let lane = 1; lane < plan.lanes; lane++) {
    const ranAt = states.get(lane)?.ranAt;
    if (ranAt === undefined ? plan.from < since : ranAt < since) stale.push(lane);
  }
  return stale;
}

/** Lane `lane`'s share under `plan`: each heartbeat group it checks, whole or a range. */
export function shareOf(
  plan: LanePlan,
  lane: number,
  groups: ReadonlyMap<string, GroupHeartbeat>,
): ShareGroup[] {
  const share: ShareGroup[] = [];
  for (const key of groups.keys()) {
    const range = laneRangeOf(plan, lane, key);
    if (range) share.push({ ref: refOf(key), range });
  }
  return share;
}

/**
 * Lane 0's planning: the samples of every lane that works from the current plan (only the
 * groups that still set a heartbeat), whether each finished a pass under it, and the next
 * plan if nextPlan calls for one, written beside the current one (the lanes adopt it from its
 * `from`). Returns the plan published, if any.
 */
async function publishPlan(
  store: SweepStore,
  options: SweepOptions,
  record: LanePlanRecord | undefined,
  states: ReadonlyMap<number, HeartbeatLaneState>,
  groups: ReadonlyMap<string, GroupHeartbeat>,
): Promise<LanePlan | undefined> {
  // Its tick's time: a plan takes effect half an interval after the tick that published it.
  const now = options.tickAt ?? options.now;
  const current = effectivePlan(record, now);
  const samples: GroupSamples = {};
  let complete = true;
  // Every lane's samples at one stride (the coarsest any lane keeps), so each stands for as
  // many names and the split points are quantiles of the whole group.
  let every = SAMPLE_EVERY;
  for (const state of states.values()) {
    if (state.planVersion === current.version)
      every = Math.max(every, state.sampleEvery ?? SAMPLE_EVERY);
  }
  for (let lane = 0; lane < current.lanes; lane++) {
    const state = states.get(lane);
    if (!state || state.planVersion !== current.version || !state.complete) complete = false;
    if (!state || state.planVersion !== current.version) continue;
    const k = Math.round(every / (state.sampleEvery ?? SAMPLE_EVERY));
    for (const [key, names] of Object.entries(state.samples)) {
      if (groups.has(key)) samples[key] = [...(samples[key] ?? []), ...thinned(names, k)];
    }
  }
  const next = nextPlan(
    record,
    options.heartbeatLanes ?? 1,
    samples,
    complete,
    now,
    options.policy.sweepIntervalMs ?? 60_000,
  );
  if (!next || options.dryRun) return undefined;
  await store.saveHeartbeatPlan({ current, next });
  return next;
}

/** `<namespace>/<name>` (heartbeat-groups.ts groupKeyOf) back to the group. */
function refOf(key: string): ObjectRef {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
