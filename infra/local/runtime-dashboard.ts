import { join } from 'node:path';
import type { DashboardSources } from '../../lib/dashboard-server/dashboard-data.ts';
import { REFUSALS_FILE } from '../../lib/dashboard-server/refusal-tally-file.ts';
import type { Dependencies } from '../../lib/dependencies.ts';

/**
 * `npm start --dashboard`: the same read-only view `registrar dashboard` serves, in the runtime's
 * own process, over the functions' store. Loaded only when asked for.
 */
export async function startRuntimeDashboard(options: {
  deps: Dependencies;
  /** Where the table is, for the dashboard's own short reads. */
  store: { region: string; endpoint: string; tableName: string };
  port: number;
  target: string;
  /** Where this runtime keeps its refusal counts (beside its local.json); absent: none kept. */
  localJsonDir: string | undefined;
}): Promise<{ url: string; close(): Promise<void> }> {
  const { deps } = options;
  const [{ startDashboard }, { localRefusals, noRefusals }, { DASHBOARD_DEFAULTS }] =
    await Promise.all([
      import('../../lib/dashboard-server/start.ts'),
      import('../../lib/dashboard-server/refusals.ts'),
      import('../../lib/dashboard-server/defaults.ts'),
    ]);
  const [{ DynamoDbEntryPages }, { createDocumentClient }, { composeRollouts }] = await Promise.all(
    [
      import('../../lib/store/dynamodb-entry-pages.ts'),
      import('../../lib/store/dynamodb-client.ts'),
      import('../../lib/wiring/rollouts.ts'),
    ],
  );
  const { region, endpoint, tableName } = options.store;
  const client = createDocumentClient({ region, endpoint });
  const pages = new DynamoDbEntryPages(client, tableName);
  const sources: DashboardSources = {
    catalog: deps.store,
    disruption: deps.store,
    sweepRuns: deps.sweepRuns,
    firstEntries: (namespace, limit) => pages.firstEntries(namespace, limit),
    groups: composeRollouts(client, tableName),
    refusals:
      options.localJsonDir === undefined
        ? noRefusals('this runtime writes no local.json, and keeps no refusal counts beside it')
        : localRefusals(join(options.localJsonDir, REFUSALS_FILE)),
    target: options.target,
    now: deps.now,
  };
  const server = await startDashboard({
    sources,
    address: DASHBOARD_DEFAULTS.address,
    port: options.port,
    refreshMs: 2_000,
  }).catch((error: unknown) => {
    client.destroy();
    throw error;
  });
  return {
    url: server.url,
    close: async () => {
      await server.close();
      client.destroy();
    },
  };
}
