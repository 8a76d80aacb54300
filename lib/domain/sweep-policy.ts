import { type EntryRecord, isAutoRegistered } from './entry-record.ts';
import type { EpochMillis } from './model.ts';

export interface SweepPolicy {
  /** How long an entry may stay disconnected before it is deleted. Default 5 min. */
  gracePeriodMs: number;
  /** API Gateway's maximum connection age. Default 2 h, its hard limit. */
  maxConnectionAgeMs: number;
}

/** 1.5 x the maximum connection age: 1.5 x 2 h = 3 h by default. */
export function staleAfterMs(policy: SweepPolicy): number {
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

/** Why an entry is due, for logs and the CLI's `sweep` output. */
export function sweepReason(record: EntryRecord): 'disconnected' | 'stale' {
  return record.connection?.connectedAt !== undefined ? 'stale' : 'disconnected';
}
