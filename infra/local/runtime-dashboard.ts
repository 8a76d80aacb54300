import { join } from 'node:path';
import type { DashboardSources } from '../../dashboard/server/dashboard-data.ts';
import type { Dependencies } from '../../lib/dependencies.ts';
import { REFUSALS_FILE } from './refusal-tally.ts';

/**
 * `npm start --dashboard`: the same read-only view `registrar dashboard` serves, in the runtime's
 * own process, over the functions' store. Loaded only when asked for.
 */
export async function startRuntimeDashboard(options: {
  deps: Dependencies;
  port: number;
  target: string;
  /** Where this runtime keeps its refusal counts (beside its local.json); absent: none kept. */
  localJsonDir: string | undefined;
}): Promise<{ url: string; close(): Promise<void> }> {
  const { deps } = options;
  const [{ startDashboard }, { localRefusals, noRefusals }, { DASHBOARD_DEFAULTS }] =
    await Promise.all([
      import('../../dashboard/server/start.ts'),
      import('../../dashboard/server/refusals.ts'),
      import('../../dashboard/server/defaults.ts'),
    ]);
  if (!deps.sweepRuns) throw new Error('the dashboard needs the sweeper runs store');
  const sources: DashboardSources = {
    catalog: deps.store,
    disruption: deps.store,
    sweepRuns: deps.sweepRuns,
    refusals:
      options.localJsonDir === undefined
        ? noRefusals('this runtime writes no local.json, and keeps no refusal counts beside it')
        : localRefusals(join(options.localJsonDir, REFUSALS_FILE)),
    target: options.target,
    now: deps.now,
  };
  return await startDashboard({
    sources,
    address: DASHBOARD_DEFAULTS.address,
    port: options.port,
    refreshMs: 2_000,
  });
}
