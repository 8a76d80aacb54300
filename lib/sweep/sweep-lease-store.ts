import type { EpochMillis } from '../domain/model.ts';

// The port of the sweeper run's lease (lib/sweep/sweep-lease.ts takes it): lane 0's and each
// heartbeat lane's.

/** Who runs the sweep now: the holder's id and until when (its invocation's deadline). */
export type SweepLease =
  | { acquired: true }
  | { acquired: false; holder: string; until: EpochMillis };

/**
 * One sweep at a time, without reserved concurrency: a run takes the lease until its own
 * deadline; a run that starts while another holds it (a late tick) does nothing. A run that
 * crashes holds it no longer than its deadline.
 */
export interface SweepLeaseStore {
  /**
   * `lane` 0 (the default) is the sweep's lease; a heartbeat lane 1..n-1 has one of its own,
   * so two invocations of one lane never overlap and no lane ever blocks the sweep.
   */
  acquireSweepLease(
    holder: string,
    now: EpochMillis,
    until: EpochMillis,
    lane?: number,
  ): Promise<SweepLease>;
  /** Lets the next run start at once; a lease taken over by another holder is left alone. */
  releaseSweepLease(holder: string, lane?: number): Promise<void>;
}
