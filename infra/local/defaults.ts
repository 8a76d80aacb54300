import { DASHBOARD_DEFAULTS } from '../../lib/dashboard-server/defaults.ts';
import { DEFAULT_FLEET_SIZE, routeThrottle } from '../route-throttle.ts';

/**
 * Defaults of the local runtime, apart from the runtime itself so that parsing `npm start`
 * options does not load the handlers (and Powertools) before main.ts has set their environment.
 */
export const LOCAL_DEFAULTS = {
  port: 8080,
  host: '127.0.0.1',
  dataDir: '.registrar',
  tableName: 'workload-registrar',
  sweepIntervalMs: 60_000,
  projectionIntervalMs: 10_000,
  // The rollout function's EventBridge schedule is 1 minute; locally template changes show sooner.
  rolloutIntervalMs: 10_000,
  /** `npm start --dashboard`: the port `registrar dashboard` uses. */
  dashboardPort: DASHBOARD_DEFAULTS.port,
  /** The stage's route throttle as the stack sets it for its default fleet size (1576/3152). */
  routeThrottle: routeThrottle(DEFAULT_FLEET_SIZE),
  /**
   * Invocations of each function at once (`--function-concurrency`): 1,000 agents starting
   * together register about 20% faster, answer in half the time and hold half the memory with 32
   * than with no limit, and 32 and 64 measure the same (docs/benchmarks.md, "Local end to end").
   */
  functionConcurrency: 32,
} as const;
