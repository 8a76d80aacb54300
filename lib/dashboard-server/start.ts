import { loadAssets } from './assets.ts';
import { DashboardData, type DashboardSources } from './dashboard-data.ts';
import { type RunningDashboard, startDashboardServer } from './http-server.ts';

export interface DashboardOptions {
  sources: DashboardSources;
  address: string;
  port: number;
  /** How often the page's view is read again (at most; see NamespaceSnapshots). */
  refreshMs: number;
  /** Things worth telling the operator (a page rebuilt at start). */
  notice?: (text: string) => void;
}

/**
 * `registrar dashboard` and `npm start --dashboard`: the page's files, the data behind them,
 * and the server. The overview is read once at start in the background, so the first page
 * load (and a namespace opened from it) is served from what was read.
 */
export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const assets = await loadAssets(options.notice);
  const data = new DashboardData(options.sources, options.refreshMs);
  const server = await startDashboardServer({
    data,
    assets,
    address: options.address,
    port: options.port,
    refreshMs: options.refreshMs,
  });
  void data.overview().catch(() => {
    // The page shows the failure when it asks; nothing to do here.
  });
  return server;
}
