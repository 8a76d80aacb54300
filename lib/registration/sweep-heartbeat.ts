import type { EntryRecord } from '../domain/entry-record.ts';
import { MIN_PASS_MS, passPeriodMs } from '../domain/heartbeat-pace.ts';
import { heldBoundMs } from '../domain/holder-heartbeat.ts';
import type { EpochMillis } from '../domain/model.ts';
import { checkEntryLiveness } from './entry-liveness-check.ts';
import { type HeartbeatFlow, heartbeatFlows, type ShareGroup } from './heartbeat-flows.ts';
import { type GroupHeartbeat, groupKeyOf, shortestBoundMs } from './heartbeat-groups.ts';
import {
  type LaneRun,
  openLane,
  recordStretch,
  saveLane,
  shareOf,
} from './heartbeat-lane-state.ts';
import { GroupSchedule, observe } from './heartbeat-schedule.ts';
import type { HeartbeatCursors, HeartbeatLaneState, HeldObservation } from './heartbeat-store.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import {
  countIn,
  type HeartbeatLaneReport,
  recordFailure,
  type SweepResult,
} from './sweep-result.ts';

/** Checks of the heartbeat lane in flight at once (beside the windows lane's own). */
export const HEARTBEAT_CONCURRENCY = 32;

// Moved to the domain (each group now has a period of its own); kept here for callers.
export { MIN_PASS_MS, passPeriodMs };

/**
 * Lane 0 between passes: the groups listed again when an `apply` changed a heartbeat since
 * (one GetItem a pass; heartbeat-groups.ts refreshedHeartbeatGroups). Lanes 1..n-1 follow
 * lane 0's record. Absent: the groups stay as the run began.
 */
export type RefreshGroups = (
  now: EpochMillis,
) => Promise<ReadonlyMap<string, GroupHeartbeat> | undefined>;

/**
 * The heartbeat lane of a run: every held entry of every group that sets a heartbeat, each
 * group checked at its own period (heartbeat-schedule.ts: half the shortest bound its holders
 * are held to, stretched only when its own namespace asks for more checks than its quota).
 * Each pass reads the due groups' entries (a Query of the group's entries: reads proportional
 * to those groups' entries, the price their namespace chose). With `repeatHeartbeatPasses`
 * (the sweeper function) a run makes a pass whenever a group is due until its sweep interval
 * is over or its deadline is near, so a bound shorter than the schedule's one minute is still
 * met; otherwise (a dry run, a manual sweep) one whole pass. Each pass's time is the run's
 * `now` plus the time elapsed since it began.
 *
 * Per-tenant pace (issue 44): before, every pass read every group and passes came at half the
 * shortest bound of any group, so one VM of namespace `evil` in a `5s x 2` group made `shop`'s
 * 40 VMs of `60s x 3` be checked 12 times a run instead of once. Now a group's checks a run
 * depend on its own setting, its holders and its namespace's quota alone.
 *
 * Fair shares (DESIGN): the lane is shared work, so a pass serves the namespaces in turn, one
 * check each (heartbeat-flows.ts), and a scheduled run's passes end with its sweep interval,
 * a pass still going included: what it did not reach waits for the next run's pass, whose
 * first round again serves every namespace (test/integration/heartbeat-fair-shares.test.ts).
 *
 * With several heartbeat lanes (`heartbeatLanes`, lib/domain/heartbeat-lanes.ts), this run
 * checks only its lane's share (heartbeat-lane-state.ts: the plan, the share, the lane's own
 * cursors and samples); lane 0 also publishes the next plan.
 */
export async function checkHeartbeatGroups(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
  initial: ReadonlyMap<string, GroupHeartbeat>,
  refresh?: RefreshGroups,
): Promise<void> {
  const groups = initial;
  const shortest = shortestBoundMs(groups);
  const sweepIntervalMs = options.policy.sweepIntervalMs;
  if (shortest === undefined || !sweepIntervalMs) return;
  const outOfTime = options.outOfTime ?? (() => false);
  const elapsed = options.elapsedMs ?? elapsedSince(performance.now());
  const sleep = options.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  const repeat = options.repeatHeartbeatPasses === true && !result.dryRun;
  // This lane's plan, its share of the groups, and where its share of the last pass stopped
  // when a run cut it: this run's first pass goes on from there.
  const run = await openLane(store, options, result, groups);
  if (!run) return;
  const quotas = await quotasOf(store, groups, result);
  const schedule = new GroupSchedule(sweepIntervalMs);
  schedule.plan(run.share, groups, run.observed, quotas, 0);
  const report: HeartbeatLaneReport = {
    lane: run.lane,
    planVersion: run.plan.version,
    ...(run.published === undefined ? {} : { published: run.published }),
    ...(run.stale && run.stale.length > 0 ? { staleLanes: run.stale } : {}),
    checked: 0,
    passesMs: [],
    passPeriodsMs: [],
    shortestBoundMs: shortest,
    periodMs: passPeriodMs(shortest, sweepIntervalMs),
    checkedByNamespace: {},
  };
  result.heartbeat = report;
  paceReport(report, schedule);
  const started = elapsed();
  const sinceStart = () => elapsed() - started;
  // Only a scheduled run has a next run to hand over to; a manual sweep makes its whole pass.
  const intervalUsed = repeat ? () => sinceStart() >= sweepIntervalMs : () => false;
  // The groups as the run knows them now: a look for changed groups (between passes, and
  // every MIN_PASS_MS within one) replaces them, and the pass going on tells the rest of a
  // changed group's VMs the new setting at once (its earlier ones at its next pass, due now).
  const live = { groups };
  const changedMidPass = new Set<string>();
  const look = async (midPass: boolean) => {
    const fresh = refresh
      ? await refresh(options.now + Math.round(sinceStart())).catch(failedRefresh(result))
      : undefined;
    if (!fresh) return;
    for (const [key, group] of fresh) {
      const before = live.groups.get(key)?.heartbeat;
      const changed =
        before?.intervalMs !== group.heartbeat.intervalMs ||
        before?.misses !== group.heartbeat.misses;
      if (midPass && changed) changedMidPass.add(key);
    }
    live.groups = fresh;
    run.share = shareOf(run.plan, run.lane, fresh);
    const observed = { ...run.observed, ...(run.state.held ?? {}) };
    const more = await quotasOf(store, fresh, result);
    schedule.plan(run.share, fresh, observed, { ...quotas, ...more }, sinceStart());
    paceReport(report, schedule);
  };
  const pass = { store, options, result, live, intervalUsed, run, report, look };
  // A lane with nothing in its share (every group another lane's) has passed over all of it:
  // lane 0 plans from lanes that finished a pass, an empty one included.
  let emptyShare = run.share.length === 0;
  try {
    for (;;) {
      const due = schedule.due(sinceStart());
      if (due.length > 0 || emptyShare) {
        emptyShare = false;
        const whole = due.length === run.share.length;
        // Whole milliseconds: times are written to entries (disconnectedAt) and compared exactly.
        const at = options.now + Math.round(sinceStart());
        if (whole) run.state.passStartedAt ??= at;
        const dueSet = new Set(due);
        const { cursors, observations, cut } = await onePass(
          pass,
          at,
          run.share.filter((g) => dueSet.has(groupKeyOf(g.ref.namespace, g.ref.name))),
        );
        run.state.cursors = cursors;
        recordObservations(run.state, due, observations, cut);
        schedule.passed(due, sinceStart());
        schedule.dueAt([...changedMidPass], sinceStart());
        changedMidPass.clear();
        if (whole && Object.keys(cursors).length === 0 && run.state.passStartedAt !== undefined) {
          // A pass over the lane's whole share ended (begun in this run or an earlier one).
          report.passesMs.push(options.now + Math.round(sinceStart()) - run.state.passStartedAt);
          report.passPeriodsMs?.push(schedule.shortestPeriodOf(due));
          run.state.complete = true;
          delete run.state.passStartedAt;
        }
      }
      if (!repeat || outOfTime()) return;
      // Until the next group is due, a look every MIN_PASS_MS at whether `apply` changed a
      // group's heartbeat: a group applied meanwhile is due at once (a VM that connected in
      // the same second is held to its bound from its first ping, and checked at its pace).
      for (;;) {
        await look(false);
        const next = schedule.earliest();
        if (next >= sweepIntervalMs) return;
        const wait = next - sinceStart();
        if (wait <= 0) break;
        const slice = refresh ? Math.min(wait, MIN_PASS_MS) : wait;
        await sleep(slice);
        if (outOfTime()) return;
        if (slice === wait) break;
      }
    }
  } finally {
    run.state.ranAt = options.now;
    await saveLane(store, run, result);
  }
}

/** The quotas of the namespaces with heartbeat groups; a failed read leaves the defaults. */
async function quotasOf(
  store: SweepStore,
  groups: ReadonlyMap<string, GroupHeartbeat>,
  result: SweepResult,
): Promise<Record<string, number>> {
  const namespaces = [...new Set([...groups.keys()].map((key) => key.slice(0, key.indexOf('/'))))];
  return store.heartbeatQuotas(namespaces).catch((error: unknown) => {
    recordFailure(result, error);
    return {};
  });
}

function failedRefresh(result: SweepResult) {
  return (error: unknown) => {
    // The groups as the run began stay: the next pass (or the next run) reads again.
    recordFailure(result, error);
    return undefined;
  };
}

/** The namespaces over their quota, for the log line and the metrics. */
function paceReport(report: HeartbeatLaneReport, schedule: GroupSchedule): void {
  const over: Record<string, { demand: number; quota: number; stretch: number }> = {};
  for (const [namespace, pace] of schedule.pace) if (pace.stretch > 1) over[namespace] = pace;
  if (Object.keys(over).length > 0) report.overQuota = over;
  else delete report.overQuota;
}

/**
 * What a pass saw of each group it passed over: the next run's pace starts from it. A pass
 * cut short (its run's interval or deadline) saw part of a group: it can only narrow the
 * shortest bound and raise the count, never forget a holder the whole read had seen.
 */
function recordObservations(
  state: HeartbeatLaneState,
  due: readonly string[],
  observations: ReadonlyMap<string, HeldObservation>,
  cut: boolean,
): void {
  const held: Record<string, HeldObservation> = { ...(state.held ?? {}) };
  for (const key of due) {
    const seen = observations.get(key) ?? { held: 0 };
    const before = held[key];
    if (!cut || !before) {
      held[key] = seen;
      continue;
    }
    const shortest = [before.shortestMs, seen.shortestMs].filter((ms) => ms !== undefined);
    held[key] = {
      held: Math.max(before.held, seen.held),
      ...(shortest.length > 0 ? { shortestMs: Math.min(...(shortest as number[])) } : {}),
    };
  }
  state.held = held;
}

async function onePass(
  pass: {
    store: SweepStore;
    options: SweepOptions;
    result: SweepResult;
    live: { groups: ReadonlyMap<string, GroupHeartbeat> };
    intervalUsed: () => boolean;
    run: LaneRun;
    report: HeartbeatLaneReport;
    /** A look for changed groups (every MIN_PASS_MS of the pass). */
    look: (midPass: boolean) => Promise<void>;
  },
  now: EpochMillis,
  share: readonly ShareGroup[],
): Promise<{
  cursors: HeartbeatCursors;
  observations: Map<string, HeldObservation>;
  cut: boolean;
}> {
  const { store, options, result, live, intervalUsed, run, report, look } = pass;
  const elapsed = options.elapsedMs ?? (() => performance.now());
  let lookedAt = elapsed();
  const { cursors } = run.state;
  const outOfTime = options.outOfTime ?? (() => false);
  const concurrency = options.livenessConcurrency ?? HEARTBEAT_CONCURRENCY;
  const lanes = new Set<Promise<void>>();
  // Notices of a changed heartbeat, beside the checks, as many in flight as checks.
  const notices = new Set<Promise<void>>();
  const tell = (send: () => Promise<void>) => {
    const notice: Promise<void> = send()
      .catch((error: unknown) => recordFailure(result, error))
      .finally(() => notices.delete(notice));
    notices.add(notice);
  };
  const observations = new Map<string, HeldObservation>();
  const flows = heartbeatFlows(
    store,
    share,
    Math.floor(now / MIN_PASS_MS),
    (error) => recordFailure(result, error),
    cursors,
    (read) => recordStretch(run, read),
  );
  const active: HeartbeatFlow[] = [...flows];
  const firstPages = firstPagesDue();
  try {
    // Round-robin, one check per namespace per turn; a flow with nothing left leaves the round.
    for (let turn = 0; active.length > 0; ) {
      if (lanes.size >= concurrency) await Promise.race(lanes);
      if (notices.size >= concurrency) await Promise.race(notices);
      if (outOfTime()) {
        result.stoppedEarly = true;
        break;
      }
      if (intervalUsed()) break;
      if (elapsed() - lookedAt >= MIN_PASS_MS) {
        lookedAt = elapsed();
        await look(true);
      }
      const groups = live.groups;
      const at = await nextReady(active, turn % active.length, firstPages.due);
      if (at === undefined) continue;
      const record = await active[at]?.take();
      if (!record) {
        active.splice(at, 1);
        turn = at;
        continue;
      }
      // A flow served out of turn (the one in turn was reading a page) leaves the turn where it
      // was: the reading flow is served as soon as its page is in.
      turn = at === turn % active.length ? at + 1 : turn;
      report.checked += 1;
      const { namespace } = record.entry.metadata;
      countIn(report.checkedByNamespace ?? {}, namespace);
      const group = record.autoRegistrationGroup ?? '';
      const key = groupKeyOf(namespace, group);
      observe(observations, key, shortestHeldMs(record, groups.get(key)));
      const lane = checkEntryLiveness(record, { store, options, result, groups, now, tell })
        .catch((error: unknown) => recordFailure(result, error))
        .finally(() => lanes.delete(lane));
      lanes.add(lane);
    }
  } finally {
    firstPages.cancel();
    await Promise.all(flows.map((flow) => flow.close().catch(() => undefined)));
  }
  await Promise.all(lanes);
  await Promise.all(notices);
  // A namespace whose share was done has no cursor; one cut before it took anything keeps its
  // old one (or none: it starts over); one this pass did not serve (none of its groups due)
  // keeps its own.
  const served = new Set(flows.map((flow) => flow.namespace));
  const next: HeartbeatCursors = Object.fromEntries(
    Object.entries(cursors).filter(([namespace]) => !served.has(namespace)),
  );
  let cut = false;
  for (const flow of flows) {
    if (flow.done) continue;
    cut = true;
    const at = flow.position ?? cursors[flow.namespace];
    if (at) next[flow.namespace] = at;
  }
  return { cursors: next, observations, cut };
}

/** The shortest bound any holder of the entry is held to (its group's pace follows it). */
function shortestHeldMs(record: EntryRecord, group: GroupHeartbeat | undefined) {
  const connection = record.connection;
  let shortest: number | undefined;
  for (const connectionId of connection?.connectionIds ?? []) {
    const bound = heldBoundMs(group, {
      since: connection?.holderSince?.[connectionId],
      agentVersion: record.agentVersion,
      beat: connection?.holderBeats?.[connectionId],
    });
    shortest = shortest === undefined ? bound : Math.min(shortest, bound);
  }
  return shortest;
}

/**
 * The flow whose turn it is (`from`), or, while it is reading a page (not ready within a turn
 * of the event loop: its next entry was not in the page it has; within FIRST_PAGE_WAIT_MS for
 * its first page, asked for with every other flow's as the pass opened), the next one after it
 * that is ready; when none is, waits for the first to be and returns undefined (the caller looks again,
 * its deadlines first).
 */
async function nextReady(
  active: readonly HeartbeatFlow[],
  from: number,
  firstPages: Promise<void>,
): Promise<number | undefined> {
  const inTurn = active[from];
  if (inTurn && !inTurn.ready) {
    await Promise.race([inTurn.whenReady(), inTurn.opened ? nextTurnOfLoop() : firstPages]);
  }
  for (let step = 0; step < active.length; step++) {
    const at = (from + step) % active.length;
    if (active[at]?.ready) return at;
  }
  await Promise.race(active.map((flow) => flow.whenReady()));
  return undefined;
}

/**
 * How long a flow's turn waits for its first page. Every flow's first page is asked for at once
 * when the pass opens, so this is waited at most once a pass, for the slowest first answer (a
 * page of 100 entries: tens of milliseconds, a few hundred on DynamoDB Local); a read that
 * hangs costs the others one second, not the pass.
 */
const FIRST_PAGE_WAIT_MS = 1_000;

function nextTurnOfLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Settles FIRST_PAGE_WAIT_MS after the pass opened its flows: one timer a pass. */
function firstPagesDue(): { due: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const due = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, FIRST_PAGE_WAIT_MS);
  });
  return { due, cancel: () => clearTimeout(timer) };
}

function elapsedSince(start: number): () => number {
  return () => performance.now() - start;
}
