import type { EpochMillis } from '../domain/model.ts';
import type { HeartbeatCursors } from '../store/registry-store.ts';
import { checkEntryLiveness } from './entry-liveness-check.ts';
import { type HeartbeatFlow, heartbeatFlows } from './heartbeat-flows.ts';
import { type GroupHeartbeat, shortestBoundMs } from './heartbeat-groups.ts';
import { type LaneRun, openLane, recordStretch, saveLane } from './heartbeat-lane-state.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import { type HeartbeatLaneReport, recordFailure, type SweepResult } from './sweep-result.ts';

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
 * sweep) one whole pass. Each pass's time is the run's `now` plus the time elapsed since it
 * began.
 *
 * Fair shares (DESIGN): the lane is shared work, so a pass serves the namespaces in turn, one
 * check each (heartbeat-flows.ts), and a scheduled run's passes end with its sweep interval,
 * a pass still going included: what it did not reach waits for the next run's pass, whose
 * first round again serves every namespace. Before, a pass went through the groups one after
 * another and a run made its passes by count (one every period), however long each took: a
 * tenant with the shortest heartbeat (5 s x 2) on 4,000 VMs made each pass ~12.5 s (at 100 ms
 * a check), so another tenant's silent VM waited for the groups ordered before its own, and the
 * run, which the next one waits for (the sweep lease; the local schedule), lasted as long as
 * its passes, so another tenant's crashed VM due meanwhile waited for all of them too: up to
 * 12 s late with sweeps every second, now 1.6 s at most
 * (test/integration/heartbeat-fair-shares.test.ts measures both).
 *
 * With several heartbeat lanes (`heartbeatLanes`, lib/domain/heartbeat-lanes.ts), this run
 * checks only its lane's share (heartbeat-lane-state.ts: the plan, the share, the lane's own
 * cursors and samples); lane 0 also publishes the next plan.
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
  // This lane's plan, its share of the groups, and where its share of the last pass stopped
  // when a run cut it: this run's first pass goes on from there.
  const run = await openLane(store, options, result, groups);
  if (!run) return;
  const report: HeartbeatLaneReport = {
    lane: run.lane,
    planVersion: run.plan.version,
    ...(run.published === undefined ? {} : { published: run.published }),
    ...(run.stale && run.stale.length > 0 ? { staleLanes: run.stale } : {}),
    checked: 0,
    passesMs: [],
    shortestBoundMs: shortest,
    periodMs: period,
  };
  result.heartbeat = report;
  const started = elapsed();
  const sinceStart = () => elapsed() - started;
  // Only a scheduled run has a next run to hand over to; a manual sweep makes its whole pass.
  const intervalUsed = repeat ? () => sinceStart() >= sweepIntervalMs : () => false;
  const pass = { store, options, result, groups, intervalUsed, run, report };
  try {
    for (;;) {
      // Whole milliseconds: times are written to entries (disconnectedAt) and compared exactly.
      const at = options.now + Math.round(sinceStart());
      run.state.passStartedAt ??= at;
      run.state.cursors = await onePass(pass, at);
      if (Object.keys(run.state.cursors).length === 0) {
        // A pass over the lane's whole share ended (begun in this run or an earlier one).
        report.passesMs.push(options.now + Math.round(sinceStart()) - run.state.passStartedAt);
        run.state.complete = true;
        delete run.state.passStartedAt;
      }
      if (!repeat || outOfTime()) return;
      // The next pass on the period's grid (0, period, 2 x period, ...): a slot a slow pass
      // overran is skipped, never made up, so the passes never outlast the interval.
      const next = (Math.floor(sinceStart() / period) + 1) * period;
      if (next >= sweepIntervalMs) return;
      const wait = next - sinceStart();
      if (wait > 0) await sleep(wait);
      if (outOfTime()) return;
    }
  } finally {
    run.state.ranAt = options.now;
    await saveLane(store, run, result);
  }
}

async function onePass(
  pass: {
    store: SweepStore;
    options: SweepOptions;
    result: SweepResult;
    groups: ReadonlyMap<string, GroupHeartbeat>;
    intervalUsed: () => boolean;
    run: LaneRun;
    report: HeartbeatLaneReport;
  },
  now: EpochMillis,
): Promise<HeartbeatCursors> {
  const { store, options, result, groups, intervalUsed, run, report } = pass;
  const { cursors } = run.state;
  const outOfTime = options.outOfTime ?? (() => false);
  const concurrency = options.livenessConcurrency ?? HEARTBEAT_CONCURRENCY;
  const lanes = new Set<Promise<void>>();
  const flows = heartbeatFlows(
    store as Required<Pick<SweepStore, 'heldEntriesOf'>>,
    run.share,
    Math.floor(now / MIN_PASS_MS),
    (error) => recordFailure(result, error),
    cursors,
    (read) => recordStretch(run, read),
  );
  const active: HeartbeatFlow[] = [...flows];
  try {
    // Round-robin, one check per namespace per turn; a flow with nothing left leaves the round.
    for (let turn = 0; active.length > 0; ) {
      if (lanes.size >= concurrency) await Promise.race(lanes);
      if (outOfTime()) {
        result.stoppedEarly = true;
        break;
      }
      if (intervalUsed()) break;
      const at = await nextReady(active, turn % active.length);
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
      const lane = checkEntryLiveness(record, { store, options, result, groups, now })
        .catch((error: unknown) => recordFailure(result, error))
        .finally(() => lanes.delete(lane));
      lanes.add(lane);
    }
  } finally {
    await Promise.all(flows.map((flow) => flow.close().catch(() => undefined)));
  }
  await Promise.all(lanes);
  // A namespace whose share was done has no cursor; one cut before it took anything keeps its
  // old one (or none: it starts over).
  const next: HeartbeatCursors = {};
  for (const flow of flows) {
    if (flow.done) continue;
    const at = flow.position ?? cursors[flow.namespace];
    if (at) next[flow.namespace] = at;
  }
  return next;
}

/**
 * The flow whose turn it is (`from`), or, while it is reading a page (not ready within a turn
 * of the event loop: its next entry was not in the page it has), the next one after it that is
 * ready; when none is, waits for the first to be and returns undefined (the caller looks again,
 * its deadlines first).
 */
async function nextReady(
  active: readonly HeartbeatFlow[],
  from: number,
): Promise<number | undefined> {
  const inTurn = active[from];
  if (inTurn && !inTurn.ready) {
    await Promise.race([inTurn.whenReady(), new Promise((resolve) => setImmediate(resolve))]);
  }
  for (let step = 0; step < active.length; step++) {
    const at = (from + step) % active.length;
    if (active[at]?.ready) return at;
  }
  await Promise.race(active.map((flow) => flow.whenReady()));
  return undefined;
}

function elapsedSince(start: number): () => number {
  return () => performance.now() - start;
}
