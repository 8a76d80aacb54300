import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import { BadParameter, entryQueryParams, nameParam, namespaceParam } from './api-params.ts';
import type { Assets } from './assets.ts';
import type { DashboardData } from './dashboard-data.ts';
import { streamView, type View } from './live-updates.ts';

/**
 * The dashboard's HTTP server: the page's files and a read-only JSON API, nothing else.
 *
 * Defences, each with a test that plays the attacker (test/integration/dashboard-server.test.ts):
 * - only GET and HEAD: there is nothing to write, and a form on another site cannot post here;
 * - the Host header must name this server (`127.0.0.1:<port>`, `localhost:<port>`, or the
 *   address it was bound to): a page of another site that rebinds its DNS name to 127.0.0.1
 *   would otherwise read the registry through the operator's browser;
 * - no CORS headers, so other origins' scripts cannot read the answers;
 * - a Content-Security-Policy of 'self' only: the page loads nothing from anywhere else (no CDN),
 *   and injected markup could run no script.
 */
export interface DashboardServerOptions {
  data: DashboardData;
  assets: Assets;
  /** Where to listen: loopback unless the operator chose otherwise (the CLI checks). */
  address: string;
  /** 0 picks a free port. */
  port: number;
  refreshMs: number;
}

export interface RunningDashboard {
  url: string;
  port: number;
  close(): Promise<void>;
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

export async function startDashboardServer(
  options: DashboardServerOptions,
): Promise<RunningDashboard> {
  let hosts = new Set<string>();
  const server: Server = createServer((request, response) => {
    handle(options, hosts, request, response).catch((error: unknown) => {
      if (!response.headersSent) {
        json(response, 503, { error: error instanceof Error ? error.message : String(error) });
      } else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  hosts = allowedHosts(options.address, port);
  const shown = isIP(options.address) === 6 ? `[${options.address}]` : options.address;
  const urlHost = isWildcard(options.address) ? '127.0.0.1' : shown;
  return {
    url: `http://${urlHost}:${port}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        // Open event streams would keep the server from closing.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const isWildcard = (address: string) => address === '0.0.0.0' || address === '::';

/**
 * Bound to every address, the server is reached by any of the machine's addresses: an IP
 * literal is accepted, a name is not (DNS rebinding needs a name).
 */
function isIpHost(host: string): boolean {
  const match = /^\[?([^\]]+?)\]?:\d+$/.exec(host);
  return match !== null && isIP(match[1] as string) !== 0;
}

/** The names a browser may use for this server; anything else is another site's page. */
function allowedHosts(address: string, port: number): Set<string> {
  const names = ['127.0.0.1', 'localhost', '[::1]'];
  if (!isWildcard(address)) {
    names.push(isIP(address) === 6 ? `[${address}]` : address);
  }
  return new Set(names.map((name) => `${name}:${port}`.toLowerCase()));
}

async function handle(
  options: DashboardServerOptions,
  hosts: Set<string>,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    return json(response, 405, {
      error: `method ${request.method} not allowed: the dashboard only reads`,
    });
  }
  const host = (request.headers.host ?? '').toLowerCase();
  if (!hosts.has(host) && !(isWildcard(options.address) && isIpHost(host))) {
    return json(response, 403, {
      error: `this dashboard answers requests for ${[...hosts].join(', ')}, not ${JSON.stringify(host)}`,
    });
  }
  const url = new URL(request.url ?? '/', 'http://dashboard.invalid');
  const { data, assets, refreshMs } = options;
  try {
    switch (url.pathname) {
      case '/api/overview':
        // Read again when the last read is older than the refresh period, whether or not a
        // page holds its live stream open: a script polling the API once saw `normal` two
        // minutes after `registrar sweep status` and the console said `slowed`.
        return json(response, 200, await data.overview(true));
      case '/api/entries': {
        const namespace = namespaceParam(url.searchParams);
        const query = entryQueryParams(url.searchParams);
        return json(response, 200, await data.entries(namespace, query));
      }
      case '/api/entry': {
        const namespace = namespaceParam(url.searchParams);
        const name = nameParam(url.searchParams);
        const entry = await data.entry(namespace, name);
        if (!entry) {
          return json(response, 404, {
            error: `workloadentries "${name}" not found in namespace "${namespace}"`,
          });
        }
        return json(response, 200, entry);
      }
      case '/api/group': {
        const namespace = namespaceParam(url.searchParams);
        const name = nameParam(url.searchParams, "a group's name");
        const group = await data.group(namespace, name);
        if (!group) {
          return json(response, 404, {
            error: `workloadgroups "${name}" not found in namespace "${namespace}"`,
          });
        }
        return json(response, 200, group);
      }
      case '/api/events':
        return streamView(data, viewParam(url.searchParams), response, refreshMs);
      default: {
        const asset = assets.get(url.pathname);
        if (!asset) return json(response, 404, { error: `no such page: ${url.pathname}` });
        response.writeHead(200, {
          'content-type': asset.type,
          'content-length': asset.body.length,
          'cache-control': 'no-cache',
        });
        response.end(request.method === 'HEAD' ? undefined : asset.body);
        return;
      }
    }
  } catch (error) {
    if (error instanceof BadParameter) return json(response, 400, { error: error.message });
    throw error;
  }
}

function viewParam(params: URLSearchParams): View {
  const view = params.get('view') ?? 'overview';
  if (view === 'overview') return { kind: 'overview' };
  if (view === 'entries') return { kind: 'entries', namespace: namespaceParam(params) };
  if (view === 'entry') {
    return { kind: 'entry', namespace: namespaceParam(params), name: nameParam(params) };
  }
  if (view === 'group') {
    return { kind: 'group', namespace: namespaceParam(params), name: nameParam(params) };
  }
  throw new BadParameter(
    `invalid view ${JSON.stringify(view)}: one of overview, entries, entry, group`,
  );
}

function json(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
  });
  response.end(text);
}
