import {
  cellKey,
  isHeld,
  nextRecord,
  type Pacing,
  pacingOf,
  zoneOf,
} from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { inTurn } from '../domain/fair-turns.ts';
import { isDueForSweep, sweepCutoffs } from '../domain/sweep-policy.ts';
import { type FailStaticGuard, failStaticGuard, isDeliberate } from './fail-static-guard.ts';
import { type NamespaceFlow, openFlows } from './namespace-flows.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import { countIn, recordFailure, type SweepResult, swept } from './sweep-result.ts';
import type { SweepIndexState } from './sweep-store.ts';

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The deletion lane of a run: deletes auto-registered entries that stayed disconnected past
 * the grace period, or still look connected long after API Gateway must have closed them (the
 * stale backstop), shared fairly among namespaces.
 *
 * Each namespace with due candidates is a flow (namespace-flows.ts), read from its own index
 * keys; the lane serves the flows round-robin, one candidate per turn (see inTurn for the
 * order). So the run's candidates (reads), deletions (the one paced lane) and time are split
 * evenly among the namespaces that have work: a namespace's backlog, of any size or kind,
 * costs another namespace one turn per round, and a due entry is taken in the first round of
 * the first run after it became due, as long as no more namespaces than `maxDeletes` have due
 * work at once (past that, within ceil(namespaces / maxDeletes) runs). A candidate skipped
 * because its cell is slowed or held uses its own namespace's turn, never another's. The index
 * only narrows the search: each candidate is re-checked with the pure policy, and hand-made
 * entries are never touched.
 *
 * A run's queues are read when it starts, so an entry that becomes due while the run goes on
 * is not in them: it waits for the next run. So after its first round the lane takes
 * candidates for at most one sweep interval, then hands over. Without that bound, one namespace's backlog made the run
 * last as long as its deletions (1,000 at 50/s: 20 s, with sweeps every 300 ms locally), and
 * another namespace's VM that crashed meanwhile waited all of it (29.5 s instead of one
 * interval, with 450 of the backlog's entries still listed). With it, the VM waits at most the
 * rest of the current run's interval, then is served in the next run's first round.
 */
export async function deleteDue(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
): Promise<void> {
  const sleep = options.sleep ?? realSleep;
  const outOfTime = options.outOfTime ?? (() => false);
  const clock = options.clock ?? Date.now;
  const onReadFailure = (error: unknown) => recordFailure(result, error);
  const failStatic = options.failStatic;
  const guard = failStatic
    ? await failStaticGuard(store, { ...options, failStatic }, result).catch((error: unknown) => {
        // Without the counters the run cannot tell a fault from departures: it deletes only
        // clean departures (never held anyway) and leaves the rest, and the record, to the
        // next run.
        recordFailure(result, error);
        return undefined;
      })
    : undefined;
  const blind = failStatic !== undefined && guard === undefined;
  const held = (namespace: string) =>
    guard?.state.mode === 'held' && isHeld(guard.state, namespace);
  const cutoffs = sweepCutoffs(options.now, options.policy);
  // While every namespace is held, or fail static cannot tell, abnormal departures and stale
  // entries are not even read: a hold costs no reads per held entry.
  const allHeld = guard?.state.mode === 'held' && guard.state.heldNamespaces === undefined;
  const sharedStates: SweepIndexState[] = allHeld || blind ? ['L'] : ['L', 'D', 'C'];
  let flows: NamespaceFlow[] = [];
  try {
    // Each shared state read apart, so one kind's backlog never hides another kind's.
    const [namespaces, ...shared] = await Promise.all([
      namespacesOf(store, guard, result),
      ...sharedStates.map((state) =>
        collect(store.sweepCandidates(cutoffs, options.maxDeletes, [state], onReadFailure)),
      ),
    ]);
    flows = await openFlows(store, {
      namespaces,
      shared: shared.flat(),
      disconnectedAtOrBefore: cutoffs.disconnectedAtOrBefore,
      policy: options.policy,
      readsAbnormal: (namespace) => !blind && !held(namespace),
      onReadFailure,
    });
    await serveFairly(flows);
  } finally {
    await Promise.all(flows.map((flow) => flow.close()));
    if (guard && !result.dryRun) {
      const { sweepIntervalMs: _, ...policy } = guard.policy;
      await store
        .saveDisruptionRecord({ ...nextRecord(guard.state, guard.credit, options.now), policy })
        .catch((error: unknown) => recordFailure(result, error));
    }
  }

  async function serveFairly(all: NamespaceFlow[]): Promise<void> {
    const readBudget = options.maxCandidates ?? 2 * options.maxDeletes;
    const active = inTurn(
      all.filter((flow) => flow.headDueAt() !== undefined),
      Math.min(readBudget, options.maxDeletes),
      Math.floor(options.now / (options.policy.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS)),
    );
    result.namespacesWithDue = active.length;
    // Spacing deletions evenly: 1000 ms / 50 per second = one every 20 ms, for all namespaces.
    const spacingMs = 1000 / options.deletesPerSecond;
    // The interval counts from the first turn, and the first round is always served: a run
    // whose reads alone took an interval (a loaded machine, sweeps every 300 ms) still gives
    // every namespace with due work its turn, or no run would ever delete anything. A manual
    // sweep (`registrar sweep`) has no schedule: no run comes after it to hand over to.
    const servingFrom = clock();
    const budgetMs = options.policy.sweepIntervalMs;
    const intervalUsed = () => budgetMs !== undefined && clock() - servingFrom >= budgetMs;
    let attempts = 0;
    for (let round = 0; active.length > 0; round++) {
      for (let turn = 0; turn < active.length; ) {
        if (result.candidatesRead >= readBudget || attempts >= options.maxDeletes) return;
        if (outOfTime()) {
          result.stoppedEarly = true;
          return;
        }
        if (round > 0 && intervalUsed()) {
          result.intervalUsed = true;
          return;
        }
        const record = await active[turn]?.take();
        if (!record) {
          active.splice(turn, 1);
          continue;
        }
        turn += 1;
        result.candidatesRead += 1;
        const pacing = paced(record, guard);
        if (pacing === undefined) continue;
        if (!result.dryRun && attempts > 0) await sleep(spacingMs);
        attempts += 1;
        await remove(record, pacing);
      }
    }
  }

  /**
   * Whether the candidate is due and its cell's pace allows its deletion now: how fail static
   * paced it ('normal' for a clean departure or without fail static), undefined when not.
   */
  function paced(record: EntryRecord, guard: FailStaticGuard | undefined): Pacing | undefined {
    if (!isDueForSweep(record, options.now, options.policy)) return undefined;
    if (isDeliberate(record)) return 'normal';
    if (blind) return undefined;
    if (!guard) return 'normal';
    const { namespace } = record.entry.metadata;
    const zone = zoneOf(record.entry.spec.locality);
    const cell = cellKey(namespace, zone);
    const pacing = pacingOf(guard.state, namespace, zone, options.now);
    // Held: counted from its cells by the guard (a held namespace's departures are not read).
    if (pacing === 'held') return undefined;
    if (pacing === 'slowed') {
      // A disrupted cell deletes at the secondary rate, carried from run to run as credit.
      if ((guard.credit[cell] ?? 0) < 1) {
        countIn(result.slowed, cell);
        return undefined;
      }
      guard.credit[cell] = (guard.credit[cell] ?? 0) - 1;
    }
    return pacing;
  }

  async function remove(record: EntryRecord, pacing: Pacing): Promise<void> {
    if (result.dryRun) {
      result.deleted.push(swept(record));
      return;
    }
    const afterHold = guard?.state.mode === 'hold-expired' && !isDeliberate(record);
    // Kept with the entry's history (why it left): how fail static paced it, if it did.
    const note =
      pacing === 'slowed'
        ? 'fail static slowed it: its zone was disrupted'
        : afterHold
          ? 'fail static had held it; deleted once the hold outlived its bound'
          : undefined;
    const deletion = { at: options.now, ...(note ? { note } : {}) };
    const outcome = await store.deleteSwept(record, deletion).catch((error: unknown) => {
      recordFailure(result, error);
      return 'failed' as const;
    });
    if (outcome === 'conflict') result.conflicts += 1;
    if (outcome !== 'deleted') return;
    result.deleted.push(swept(record));
    if (afterHold) {
      const { namespace } = record.entry.metadata;
      countIn(result.afterHoldBound, cellKey(namespace, zoneOf(record.entry.spec.locality)));
    }
  }
}

/** A manual sweep (`registrar sweep`) knows no schedule: its turns rotate by the minute. */
const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

/**
 * The namespaces to look in (the namespace index and the cells' namespaces; the guard's cells
 * when it read them). A failed read is a failure of the run, which goes on with the cells'
 * namespaces it has, and the namespaces of the shared keys' candidates.
 */
async function namespacesOf(
  store: SweepStore,
  guard: FailStaticGuard | undefined,
  result: SweepResult,
): Promise<string[]> {
  try {
    return await store.sweepNamespaces(guard?.state.zones);
  } catch (error) {
    recordFailure(result, error);
    return guard?.state.zones.map((zone) => zone.namespace) ?? [];
  }
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}
