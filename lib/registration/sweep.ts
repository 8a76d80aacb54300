import { deleteDue } from './sweep-deletions.ts';
import { checkLiveness } from './sweep-liveness.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import { emptyResult, type SweepResult } from './sweep-result.ts';

export { LIVENESS_CONCURRENCY } from './sweep-liveness.ts';
export type { SweepOptions, SweepStore } from './sweep-options.ts';
export type { SweepResult, SweptEntry } from './sweep-result.ts';

/**
 * One sweeper run: two lanes side by side for the whole run.
 * - Deletions (sweep-deletions.ts): entries disconnected past the grace period, and stale
 *   ones, each namespace served in turn from its own queue, paced, fail static applied.
 * - Liveness (sweep-liveness.ts): the holders of the connected entries due for a check, asked
 *   of API Gateway, 32 at a time.
 * Neither waits for the other, so a backlog of deletions of any size never takes the liveness
 * checks' time: they keep the whole run (a guaranteed share), as the deletions do; both stop
 * before the deadline, and the next run goes on where each stopped.
 */
export async function runSweep(store: SweepStore, options: SweepOptions): Promise<SweepResult> {
  const result = emptyResult(options.dryRun ?? false);
  await Promise.all([deleteDue(store, options, result), checkLiveness(store, options, result)]);
  return result;
}
