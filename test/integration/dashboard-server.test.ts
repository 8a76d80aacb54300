import { request } from 'node:http';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  EntriesResponse,
  EntryResponse,
  GroupResponse,
  OverviewResponse,
} from '../../lib/dashboard-server/api-types.ts';
import type { DashboardSources } from '../../lib/dashboard-server/dashboard-data.ts';
import type { RunningDashboard } from '../../lib/dashboard-server/http-server.ts';
import { noRefusals } from '../../lib/dashboard-server/refusals.ts';
import { startDashboard } from '../../lib/dashboard-server/start.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbEntryPages } from '../../lib/store/dynamodb-entry-pages.ts';
import { DynamoDbSweepRuns } from '../../lib/store/dynamodb-sweep-runs.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { composeRollouts } from '../../lib/wiring/rollouts.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import {
  type FreshRegistry,
  freshRegistry,
  startTestDynamo,
  type TestDynamo,
} from '../fixtures/dynamo.ts';

/**
 * The dashboard's server over a real registry (dynalite): what it answers, that it never
 * writes, and the defences of a local web server holding the operator's credentials, each
 * played by the attacker it stops.
 */
let dynamo: TestDynamo;
let registry: FreshRegistry;
let counter: RequestCounter;
let server: RunningDashboard;
let base: string;
const T0 = Date.now();

async function connect(name: string, at: number, locality = 'us-east-1/us-east-1a/r1') {
  await registry.store.connect(
    connectChange({
      name,
      namespace: 'shop',
      connectionId: `c-${name}-${at}`,
      connectedAt: at,
      locality,
    }),
  );
}

/** The dashboard's own client, apart from the test's writes, so its requests can be counted. */
let reads: RegistrarStore;
let readsClient: DynamoDBDocumentClient;

function start(address: string): Promise<RunningDashboard> {
  const sources: DashboardSources = {
    catalog: reads,
    disruption: reads,
    sweepRuns: new DynamoDbSweepRuns(readsClient, registry.tableName),
    firstEntries: (namespace, limit) =>
      new DynamoDbEntryPages(readsClient, registry.tableName).firstEntries(namespace, limit),
    refusals: noRefusals('a test table'),
    groups: composeRollouts(readsClient, registry.tableName),
    target: `table '${registry.tableName}'`,
    now: () => Date.now(),
  };
  return startDashboard({ sources, address, port: 0, refreshMs: 100 });
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  registry = await freshRegistry(dynamo.endpoint);
  await registry.store.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { template: { ports: { http: 8080 } } },
  });
  await connect('web-1', T0 - 3_000);
  await connect('web-2', T0 - 2_000, 'us-east-1/us-east-1b/r1');
  await registry.store.reportHealth({
    connectionId: `c-web-1-${T0 - 3_000}`,
    entry: { namespace: 'shop', name: 'web-1' },
    healthy: false,
    message: 'HTTP 503',
    at: T0 - 1_000,
  });
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  counter = countRequests(raw);
  readsClient = documentClientFor(raw);
  reads = composeRegistry(readsClient, registry.tableName);
  server = await start('127.0.0.1');
  base = server.url.replace(/\/$/, '');
}, 60_000);

afterAll(async () => {
  await server?.close();
  readsClient?.destroy();
  await dynamo?.close();
});

/** A raw request, with the Host header a browser (or an attacker's page) would send. */
function fetchRaw(
  path: string,
  options: { method?: string; host?: string; url?: string } = {},
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}> {
  const target = new URL(path, options.url ?? base);
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      { method: options.method ?? 'GET', headers: options.host ? { host: options.host } : {} },
      (response) => {
        let body = '';
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function getJson<T>(path: string): Promise<T> {
  const response = await fetchRaw(path);
  expect(response.status, response.body).toBe(200);
  return JSON.parse(response.body) as T;
}

describe('what the dashboard answers', () => {
  it('the overview counts each namespace and zone', async () => {
    const overview = await getJson<OverviewResponse>('/api/overview');
    expect(overview.fleet).toEqual({
      entries: 2,
      connected: 2,
      healthy: 0,
      unhealthy: 1,
      away: 0,
      handMade: 0,
    });
    expect(overview.cells.map((cell) => [cell.zone, cell.connected, cell.unhealthy])).toEqual([
      ['us-east-1/us-east-1a', 1, 1],
      ['us-east-1/us-east-1b', 1, 0],
    ]);
    expect(overview.refusals.unavailable).toBe('a test table');
  });

  it("a namespace's entries, sorted and paged on the server", async () => {
    const page = await getJson<EntriesResponse>(
      '/api/entries?namespace=shop&sort=name&order=desc&pageSize=1',
    );
    expect(page).toMatchObject({ total: 2, matched: 2, pages: 2, page: 1 });
    expect(page.rows.map((row) => row.name)).toEqual(['web-2']);
    const unhealthy = await getJson<EntriesResponse>(
      '/api/entries?namespace=shop&health=unhealthy',
    );
    expect(unhealthy.rows.map((row) => [row.name, row.cells.healthy])).toEqual([
      ['web-1', 'False'],
    ]);
  });

  it('one entry, with its holders and Healthy condition', async () => {
    const entry = await getJson<EntryResponse>('/api/entry?namespace=shop&name=web-1');
    expect(entry.holders).toEqual([
      {
        connectionId: `c-web-1-${T0 - 3_000}`,
        since: T0 - 3_000,
        age: expect.stringMatching(/^\d+s$/),
        newest: true,
      },
    ]);
    expect(entry.healthy).toMatchObject({ status: 'False', message: 'HTTP 503' });
    expect(entry.yaml).toMatch(/^apiVersion: networking\.istio\.io\/v1\nkind: WorkloadEntry\n/);
    // The entry's event history, as `describe we` shows it: the health transition was recorded
    // (a routine connect is not an event; the fixture's entry has no creation time: no
    // Registered).
    expect(entry.events.map((event) => [event.reason, event.from])).toEqual([
      ['Unhealthy', expect.any(String)],
    ]);
  });

  it("a namespace's first entries by name take one Query of that many items", async () => {
    const before = counter.counts().Query ?? 0;
    const first = await new DynamoDbEntryPages(readsClient, registry.tableName).firstEntries(
      'shop',
      1,
    );
    expect(first.map((record) => record.entry.metadata.name)).toEqual(['web-1']);
    expect((counter.counts().Query ?? 0) - before).toBe(1);
    expect(counter.requests().at(-1)?.input).toMatchObject({ Limit: 1 });
  });

  it('refuses a bad request with the parameter and its value, and a missing entry with 404', async () => {
    const bad = await fetchRaw('/api/entries?namespace=shop&sort=secret');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toEqual({
      error: expect.stringMatching(/^invalid sort "secret": one of name, address/),
    });
    const missing = await fetchRaw('/api/entry?namespace=shop&name=web-9');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).error).toBe(
      'workloadentries "web-9" not found in namespace "shop"',
    );
  });

  it('one group, with its template and its rollout; a missing one is a 404, a bad name a 400', async () => {
    const group = await getJson<GroupResponse>('/api/group?namespace=shop&name=web');
    expect(group).toMatchObject({
      namespace: 'shop',
      name: 'web',
      generation: 1,
      probe: '<none>',
      rollout: { entries: 2, upToDate: 2, pending: 0, waiting: 0, state: 'complete' },
    });
    expect(group.yaml).toMatch(/^apiVersion: networking\.istio\.io\/v1\nkind: WorkloadGroup\n/);
    const missing = await fetchRaw('/api/group?namespace=shop&name=api');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).error).toBe(
      'workloadgroups "api" not found in namespace "shop"',
    );
    const bad = await fetchRaw('/api/group?namespace=shop&name=Web_1');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error).toMatch(/^invalid name "Web_1": a group's name is/);
  });

  it('pushes a change to an open page when a VM registers, without being asked', async () => {
    const controller = new AbortController();
    const response = await fetch(`${base}/api/events?view=entries&namespace=shop`, {
      signal: controller.signal,
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    const changes = () => text.split('\n').filter((line) => line === 'event: change').length;
    const readUntil = async (wanted: number) => {
      while (changes() < wanted) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended after ${changes()} changes:\n${text}`);
        text += decoder.decode(value);
      }
    };
    await readUntil(1); // what the page loaded with
    await connect('web-3', Date.now());
    await readUntil(2);
    controller.abort();
    const page = await getJson<EntriesResponse>('/api/entries?namespace=shop');
    expect(page.rows.map((row) => row.name)).toEqual(['web-1', 'web-2', 'web-3']);
  });

  it('serves the page itself, which loads nothing from elsewhere', async () => {
    const page = await fetchRaw('/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const sources = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(source).toMatch(/^(\/|data:)/);
    const script = await fetchRaw('/assets/main.js');
    expect(script.status).toBe(200);
    expect(script.body).not.toMatch(
      /https?:\/\/(?!127\.0\.0\.1)[a-z0-9.-]+\.(com|net|org|io)\/[^"'\s]*\.(js|css)/,
    );
  });
  it('the overview is read again when due, with no page open', async () => {
    const before = await getJson<OverviewResponse>('/api/overview');
    await connect('web-9', T0 - 1_500);
    const deadline = Date.now() + 10_000;
    let after = await getJson<OverviewResponse>('/api/overview');
    while (after.fleet.entries !== before.fleet.entries + 1 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = await getJson<OverviewResponse>('/api/overview');
    }
    expect(after.fleet.entries).toBe(before.fleet.entries + 1);
    expect(after.fleet.connected).toBe(before.fleet.connected + 1);
  });
});

describe('the defences', () => {
  it('refuses every method but GET and HEAD: there is nothing to write', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const response = await fetchRaw('/api/overview', { method });
      expect(response.status).toBe(405);
      expect(response.headers.allow).toBe('GET, HEAD');
    }
  });

  it('refuses a page of another site that rebinds its name to 127.0.0.1 (DNS rebinding)', async () => {
    const port = new URL(base).port;
    const attack = await fetchRaw('/api/overview', { host: `attacker.example:${port}` });
    expect(attack.status).toBe(403);
    expect(attack.body).not.toContain('web-1');
    const localhost = await fetchRaw('/api/overview', { host: `localhost:${port}` });
    expect(localhost.status).toBe(200);
  });

  it('gives other origins no way to read its answers, and the page no way to load foreign code', async () => {
    const response = await fetchRaw('/api/overview');
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
    expect(response.headers['content-security-policy']).toMatch(
      /default-src 'self'; script-src 'self'/,
    );
    expect(response.headers['x-content-type-options']).toBe('nosniff');
  });

  it('served on every address (--allow-remote), still refuses a name it was not given', async () => {
    const everywhere = await start('0.0.0.0');
    try {
      const url = `http://127.0.0.1:${everywhere.port}`;
      expect((await fetchRaw('/api/overview', { url })).status).toBe(200);
      const rebound = await fetchRaw('/api/overview', {
        url,
        host: `attacker.example:${everywhere.port}`,
      });
      expect(rebound.status).toBe(403);
    } finally {
      await everywhere.close();
    }
  });

  it('never wrote to the registry: reads only, whatever the pages asked', () => {
    const writes = Object.entries(counter.counts()).filter(([command]) =>
      /Put|Update|Delete|Write/.test(command),
    );
    expect(Object.keys(counter.counts())).toContain('Query');
    expect(writes).toEqual([]);
  });
});
