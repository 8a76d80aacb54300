import { type EntryRecord, isAutoRegistered } from './entry-record.ts';
import type { EpochMillis } from './model.ts';

export interface SweepPolicy {
  /** How long an entry may stay disconnected before it is deleted. Default 5 min. */
  gracePeriodMs: number;
  /** API Gateway's maximum connection age. Default 2 h, its hard limit. */
  maxConnectionAgeMs: number;
}

/** When the sweeper checks that a connected entry's holders still exist. */
export interface LivenessPolicy {
  /** Each connected entry is checked once per interval. Default 5 min. */
  livenessIntervalMs: number;
  /** How often the sweeper runs (its schedule): a first run covers this much. */
  sweepIntervalMs: number;
  maxConnectionAgeMs: number;
}

/**
 * Connected entries whose newest connect is in `[from, to)` are due for a liveness check, each
 * at its newest connect + `dueAfterMs` (a whole number of liveness intervals; 0 if absent).
 */
export interface LivenessWindow {
  from: EpochMillis;
  to: EpochMillis;
  dueAfterMs?: number;
}

/** 1.5 x the maximum connection age: 1.5 x 2 h = 3 h by default. */
export function staleAfterMs(policy: Pick<SweepPolicy, 'maxConnectionAgeMs'>): number {
  return policy.maxConnectionAgeMs * 1.5;
}

/**
 * The bounds of the sweep index queries: an entry disconnected at or before
 * `disconnectedAtOrBefore`, or still marked connected with a newest connect strictly before
 * `connectedBefore`, may be due. The sweeper still checks each one with `isDueForSweep`.
 */
export interface SweepCutoffs {
  disconnectedAtOrBefore: EpochMillis;
  connectedBefore: EpochMillis;
}

export function sweepCutoffs(now: EpochMillis, policy: SweepPolicy): SweepCutoffs {
  return {
    disconnectedAtOrBefore: now - policy.gracePeriodMs,
    connectedBefore: now - staleAfterMs(policy),
  };
}

/**
 * Whether the sweeper should delete the entry now.
 * - hand-made entries (no `autoRegistrationGroup`) are never swept;
 * - a disconnected entry is due once it has been disconnected for the grace period;
 * - a connected entry is due when `now - connectedAt > 1.5 x maxConnectionAge` (strictly):
 *   its `$disconnect` never arrived, which API Gateway allows (best-effort delivery).
 *   A `connectedAt` in the future (clock skew) is never stale.
 */
export function isDueForSweep(record: EntryRecord, now: EpochMillis, policy: SweepPolicy): boolean {
  if (!isAutoRegistered(record)) return false;
  const connection = record.connection;
  if (!connection) return false;
  if (connection.connectedAt !== undefined) {
    return now - connection.connectedAt > staleAfterMs(policy);
  }
  if (connection.disconnectedAt !== undefined) {
    return now - connection.disconnectedAt >= policy.gracePeriodMs;
  }
  return false;
}

/**
 * When the entry becomes due (the first time isDueForSweep holds): its disconnect plus the
 * grace period, or, still marked connected, just after 1.5 x the maximum age. The fair
 * sweeper orders each namespace's candidates, and the namespaces, by it.
 */
export function sweepDueAt(record: EntryRecord, policy: SweepPolicy): EpochMillis {
  const connection = record.connection;
  if (connection?.connectedAt !== undefined) {
    return connection.connectedAt + staleAfterMs(policy) + 1;
  }
  return (connection?.disconnectedAt ?? Number.POSITIVE_INFINITY) + policy.gracePeriodMs;
}

/** Why an entry is due, for logs and the CLI's `sweep` output. */
export function sweepReason(record: EntryRecord): 'disconnected' | 'stale' {
  return record.connection?.connectedAt !== undefined ? 'stale' : 'disconnected';
}

/**
 * The liveness windows of a sweeper run that covers the time `[from, to)` since the previous
 * run's `to`. An entry whose newest connect was at `c` is due at `c + k x interval` (k = 1, 2, ...):
 * the run whose span holds that time checks it. Consecutive runs' spans tile time, so each
 * connected entry is checked once per interval, and no write happens while its holders are
 * alive. Checks go on until the entry would be stale (1.5 x the maximum age), after which the
 * stale rule takes over. Window k holds the entries due `k x interval` after their connect:
 * the windows are disjoint, so each entry's due time is known, and a run can check in due-time
 * order and stop (and resume) at any point of its span.
 */
export function livenessWindows(
  span: { from: EpochMillis; to: EpochMillis },
  policy: Pick<LivenessPolicy, 'livenessIntervalMs' | 'maxConnectionAgeMs'>,
): LivenessWindow[] {
  const interval = policy.livenessIntervalMs;
  // A sweeper that was down for longer than an interval checks one interval's worth: every
  // connected entry once.
  const from = Math.max(span.from, span.to - interval);
  if (from >= span.to) return [];
  const checks = Math.ceil(staleAfterMs(policy) / interval);
  const windows: LivenessWindow[] = [];
  for (let k = 1; k <= checks; k++) {
    const dueAfterMs = k * interval;
    windows.push({ from: from - dueAfterMs, to: span.to - dueAfterMs, dueAfterMs });
  }
  return windows;
}

/** When the entry connected at `connectedAt` is due in these windows; undefined if in none. */
export function livenessDueAt(
  windows: readonly LivenessWindow[],
  connectedAt: EpochMillis,
): EpochMillis | undefined {
  const window = windows.find((w) => connectedAt >= w.from && connectedAt < w.to);
  return window ? connectedAt + (window.dueAfterMs ?? 0) : undefined;
}
