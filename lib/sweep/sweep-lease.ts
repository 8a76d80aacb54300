import { logger } from '../observability.ts';
import type { SweepLeaseStore } from './sweep-lease-store.ts';
import type { SweeperInvocation, SweepRunDependencies } from './sweep-run-dependencies.ts';

/**
 * Runs `work` under the invocation's lane's lease, or returns `skipped()` when another
 * invocation holds it. Lane 0's lease is the sweep's: one run at a time. Each heartbeat lane
 * 1 .. n-1 has its own, so two invocations of one lane never overlap and no lane ever delays a
 * deletion.
 *
 * The lease lasts until this invocation's deadline (on Lambda, the timeout is shorter than the
 * sweep interval), and never longer than one interval (the local runtime's invocations have 15
 * minutes), so a run that crashes or is killed blocks the next no longer than that. A tick that
 * finds it held (the previous run is still going) does nothing: the next tick does it anyway.
 */
export async function underLaneLease<T>(
  deps: Pick<SweepRunDependencies, 'config' | 'now'> & { store: SweepLeaseStore },
  invocation: SweeperInvocation,
  work: { run: (startedAt: number) => Promise<T>; skipped: () => T },
): Promise<T> {
  const { holder, lane } = invocation;
  const startedAt = deps.now();
  const leaseMs = Math.min(invocation.remainingMs(), deps.config.sweep.sweepIntervalMs);
  // Lane 0 names no lane: the sweep's lease as the store has always kept it.
  const lease =
    lane > 0
      ? await deps.store.acquireSweepLease(holder, startedAt, startedAt + leaseMs, lane)
      : await deps.store.acquireSweepLease(holder, startedAt, startedAt + leaseMs);
  if (!lease.acquired) {
    const held = { holder: lease.holder, until: new Date(lease.until).toISOString() };
    if (lane > 0) {
      logger.info('this heartbeat lane is still running; this tick skips', {
        heartbeatLane: lane,
        ...held,
      });
    } else logger.info('another sweep run is still going; this tick skips', held);
    return work.skipped();
  }
  try {
    return await work.run(startedAt);
  } finally {
    // The next tick need not wait for this run's deadline. Best effort: the lease runs out.
    const released =
      lane > 0 ? deps.store.releaseSweepLease(holder, lane) : deps.store.releaseSweepLease(holder);
    await released.catch((error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error);
      if (lane > 0) {
        logger.warn('could not release the heartbeat lane lease; it runs out at the deadline', {
          heartbeatLane: lane,
          reason,
        });
      } else
        logger.warn('could not release the sweep lease; it runs out at the deadline', { reason });
    });
  }
}
