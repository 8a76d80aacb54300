import type { EpochMillis } from '../domain/model.ts';

// The port the sweep run (lib/sweep/sweep-run.ts) records its summary through, and the
// dashboard reads the recent runs from; lib/store/dynamodb-sweep-runs.ts implements it.

/** One run as the sweeper function summarized it. */
export interface SweepRun {
  /** When the run finished. */
  at: EpochMillis;
  /** Entries deleted (disconnected past the grace period, or stale). */
  deleted: number;
  /** Deletes that lost to a reconnect landing after the read. */
  conflicts: number;
  /** Sweep candidates read from the sweep index. */
  candidatesRead: number;
  /** Connected entries whose holders were checked with API Gateway. */
  livenessChecked: number;
  livenessUnknown: number;
  phantomsDropped: number;
  /** The run stopped at its deadline with work left. */
  stoppedEarly: boolean;
  /** Deletes and checks that failed (the next run retries them). */
  failed: number;
  /** Fail static's mode: normal, held, hold-expired or released. */
  mode: string;
  /** Deletions held back, and deferred by a slowed cell. */
  held: number;
  slowed: number;
}

/** The sweeper's recent runs, for `registrar dashboard`'s chart. */
export interface SweepRunStore {
  /** Records one run; the caller decides what a failure means (the sweeper goes on). */
  record(run: SweepRun): Promise<void>;
  /** The runs kept, oldest first, none older than `since`. */
  recent(since: EpochMillis): Promise<SweepRun[]>;
}
