import { DEFAULTS } from '../../lib/config-env.ts';
import type { StackOptions } from '../stack-options.ts';

// Lambda's hard maximum run time.
const LAMBDA_MAX_TIMEOUT_S = 900;
// Left for the index queries before the deletes and for the end of the run.
const MARGIN_S = 10;

/**
 * The sweeper's memory, which on Lambda is its CPU: 1,769 MB buys one vCPU, CPU is given in
 * proportion (AWS Lambda developer guide, "Configure Lambda function memory"). The sweeper is
 * CPU-bound at fleet size (JSON, SigV4 and HTTP for ~20,000 liveness checks a minute at 100,000
 * VMs, their index reads, and up to 2,000 deletions beside them), not memory-bound: it streams
 * the index a page at a time. Measured by `npm run bench -- scale` (docs/benchmarks.md, "Fleet
 * scale"): at 100,000 VMs a run takes up to ~10-16 s of CPU, which at 512 MB (0.29 vCPU) is
 * 35-55 s of a 45 s run; at one vCPU it is a third of the run, and the ceiling of one sweeper
 * ~3x the 100,000 VMs the design serves (docs/architecture.md, "Scale"). CPU-bound work costs
 * the same GB-seconds at any memory; only the I/O-bound part of a run costs more.
 */
export const SWEEPER_MEMORY_MB = 1_769;

/** One vCPU's worth of Lambda memory. */
export const MB_PER_VCPU = 1_769;

/**
 * Sizing for the run's time. Deletes are rate-limited to 50/s, so a run is sized to end before
 * the next tick. At the default 1-minute rate:
 *   timeout    = 60 s - 10 s                        = 50 s
 *   max deletes = 50/s x (50 s - 10 s for queries)  = 2,000 per run
 * so even if all 100,000 entries expire together (a region-wide disconnect), 50 runs
 * (50 minutes) delete them without ever overlapping. The liveness checks run beside the
 * deletions for the whole run (lib/registration/sweep.ts), so the deletions take none of
 * their time.
 */
export function sweeperSizing(options: Pick<StackOptions, 'sweepRateMinutes'>): {
  timeoutS: number;
  maxDeletes: number;
  memoryMb: number;
} {
  const timeoutS = Math.min(options.sweepRateMinutes * 60 - MARGIN_S, LAMBDA_MAX_TIMEOUT_S);
  const maxDeletes = DEFAULTS.sweepDeletesPerSecond * (timeoutS - MARGIN_S);
  return { timeoutS, maxDeletes, memoryMb: SWEEPER_MEMORY_MB };
}
