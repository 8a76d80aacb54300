import {
  cellKey,
  type DisruptionPolicy,
  type DisruptionState,
  evaluateDisruption,
  isHeld,
  modesOf,
  refillCredit,
  type ZoneCount,
} from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { fleetModeOfRecord } from '../domain/fail-static-status.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { SweepPolicy } from '../domain/sweep-policy.ts';
import type { SweepResult } from './sweep-result.ts';
import type { DisruptionStore } from './sweep-store.ts';

/** Up to this many away entries are counted from the index each run; more: the counters. */
export const AWAY_RECOUNT_LIMIT = 1_000;

export type FailStaticPolicy = DisruptionPolicy & { sweepIntervalMs: number };

/** This run's fail-static decision, and the slowed cells' deletion credit it spends. */
export interface FailStaticGuard {
  state: DisruptionState;
  credit: Record<string, number>;
  policy: FailStaticPolicy;
}

/**
 * Reads the cells' counters, the newest connect and the previous run's record (O(cells +
 * shards) reads, whatever the number of entries), recounts the entries away of the namespaces
 * with few of them, and decides this run's mode.
 */
export async function failStaticGuard(
  store: DisruptionStore,
  options: { now: EpochMillis; policy: SweepPolicy; failStatic: FailStaticPolicy },
  result: SweepResult,
): Promise<FailStaticGuard> {
  const { now, failStatic: policy } = options;
  const [counted, newestConnectAt, previous] = await Promise.all([
    store.zoneCounts(),
    store.newestConnectAt(),
    store.disruptionRecord(),
  ]);
  const state = evaluateDisruption({
    now,
    zones: await recounted(store, counted),
    newestConnectAt,
    previous,
    policy,
    lookbackMs: policy.windowMs + options.policy.gracePeriodMs,
    maxConnectionAgeMs: options.policy.maxConnectionAgeMs,
  });
  const credit = refillCredit(state, previous, now, policy);
  result.disruption = {
    ...state,
    previousMode: previous?.mode,
    fleetMode: modesOf(state, now).fleet,
    previousFleetMode: previous ? fleetModeOfRecord(previous, previous.evaluatedAt) : undefined,
  };
  // A held namespace's abnormal departures are not read (a hold costs no reads per held
  // entry): its held entries are counted from its cells.
  if (state.mode === 'held') {
    for (const zone of state.zones) {
      if (zone.away > 0 && isHeld(state, zone.namespace)) result.held[zone.cell] = zone.away;
    }
  }
  return { state, credit, policy };
}

/**
 * The index says how many are really away: a counter that drifted up (an ADD resent after
 * another transition, a crash between two writes) must not slow or hold deletions on its own.
 * Namespaces are recounted fewest away first (a drift of one matters most in a small cell),
 * within AWAY_RECOUNT_LIMIT items in all; the rest keep their counters.
 */
async function recounted(store: DisruptionStore, counted: ZoneCount[]): Promise<ZoneCount[]> {
  const awayOf = new Map<string, number>();
  for (const zone of counted) {
    awayOf.set(zone.namespace, (awayOf.get(zone.namespace) ?? 0) + Math.max(0, zone.away));
  }
  const namespaces = [...awayOf]
    .filter(([, away]) => away > 0)
    .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : 1))
    .map(([namespace]) => namespace);
  const actual = await store.awayByZone(AWAY_RECOUNT_LIMIT, namespaces);
  if (!actual) return counted;
  return counted.map((zone) =>
    actual.namespaces.has(zone.namespace)
      ? {
          ...zone,
          away: Math.min(zone.away, actual.byCell[cellKey(zone.namespace, zone.zone)] ?? 0),
        }
      : zone,
  );
}

/** A clean close: never held, never slowed (an entry without a record reads as abnormal). */
export function isDeliberate(record: EntryRecord): boolean {
  const connection = record.connection;
  return connection?.connectedAt === undefined && connection?.departure === 'clean';
}
