import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { DashboardData } from './dashboard-data.ts';

/**
 * Live updates without a reload: a page keeps one Server-Sent Events stream open for what it
 * shows (the overview, a namespace's entries, one entry). Every `refreshMs` the server reads
 * what is due (the namespace snapshots keep reads within their duty cycle) and, when what the
 * page shows changed, sends `change`; the page then fetches its view again. A read that fails
 * sends `problem` with the reason, and the next success `change` again, so the page never
 * shows stale numbers as if they were current.
 */
export type View =
  | { kind: 'overview' }
  | { kind: 'entries'; namespace: string }
  | { kind: 'entry'; namespace: string; name: string }
  | { kind: 'group'; namespace: string; name: string };

/** A comment line now and then keeps proxies and the browser from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

export async function versionOf(data: DashboardData, view: View): Promise<string> {
  if (view.kind === 'entries') return (await data.refreshEntries(view.namespace)).version;
  if (view.kind === 'group') {
    const group = await data.group(view.namespace, view.name);
    if (!group) return 'gone';
    const { readAt: _read, ...rest } = group;
    return digest(rest);
  }
  if (view.kind === 'entry') {
    const entry = await data.entry(view.namespace, view.name);
    if (!entry) return 'gone';
    // Ages change every second; the page shows them as of its last fetch.
    const { readAt: _read, holders, events, ...rest } = entry;
    return digest({
      rest,
      holders: holders.map((h) => h.connectionId),
      events: events.map((e) => [e.reason, e.at]),
    });
  }
  const overview = await data.overview(true);
  return digest({
    fleet: overview.fleet,
    cells: overview.cells,
    failStatic: overview.failStatic,
    banner: overview.banner,
    runs: overview.sweeps.runs.map((run) => run.at),
    refusals: overview.refusals.series.map((series) => [series.reason, series.total]),
    unavailable: overview.refusals.unavailable ?? null,
  });
}

function digest(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);
}

/** Streams `change` and `problem` events for one view until the page goes away. */
export function streamView(
  data: DashboardData,
  view: View,
  response: ServerResponse,
  refreshMs: number,
): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
  });
  response.write(`retry: ${Math.max(1_000, refreshMs)}\n\n`);
  let last: string | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const send = (event: string, payload: unknown) => {
    if (!closed) response.write(`event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`);
  };
  const tick = async () => {
    try {
      const version = await versionOf(data, view);
      if (version !== last) {
        // The first version is what the page loaded with (or newer): it refetches once then.
        send('change', { version });
        last = version;
      }
    } catch (error) {
      last = undefined;
      send('problem', { error: error instanceof Error ? error.message : String(error) });
    }
    if (!closed) timer = setTimeout(tick, refreshMs);
  };
  const keepalive = setInterval(() => {
    if (!closed) response.write(': keepalive\n\n');
  }, KEEPALIVE_MS);
  response.on('close', () => {
    closed = true;
    clearTimeout(timer);
    clearInterval(keepalive);
  });
  void tick();
}
