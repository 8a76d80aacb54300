import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { loadAssets } from '../lib/dashboard-server/assets.ts';
import { DashboardData, type DashboardSources } from '../lib/dashboard-server/dashboard-data.ts';
import {
  type RunningDashboard,
  startDashboardServer,
} from '../lib/dashboard-server/http-server.ts';
import { noRefusals } from '../lib/dashboard-server/refusals.ts';
import type { EntryRecord } from '../lib/domain/entry-record.ts';
import type { RegistrarStore } from '../lib/registrar-store.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { DynamoDbEntryPages } from '../lib/store/dynamodb-entry-pages.ts';
import { DynamoDbSweepRuns } from '../lib/store/dynamodb-sweep-runs.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { encodeEntry } from '../lib/store/item-codec.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { benchIp, connectBenchVm } from './bench-entries.ts';

const TEMPLATES = 20;

const BENCH_GROUP = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'bench', namespace: 'bench' },
  spec: { template: { ports: { http: 8080 } } },
} as const;

/**
 * TEMPLATES entries through the real connect path (a tenth reported unhealthy, a twentieth
 * gone), then `entries` copies of them under their own names and addresses, written in batches
 * of 25: the items are what the connect path writes, and 20,000 of them take seconds, not the
 * quarter of an hour 20,000 connects take on a loaded dynalite.
 */
async function seed(
  client: DynamoDBDocumentClient,
  store: RegistrarStore,
  entries: number,
  now: number,
): Promise<void> {
  const templates: EntryRecord[] = [];
  for (let i = 0; i < TEMPLATES; i++) {
    const { entry, connectionId } = await connectBenchVm(store, i, now - 60_000 + i);
    if (i % 10 === 0) {
      await store.reportHealth({
        connectionId,
        entry,
        healthy: false,
        message: 'HTTP 503',
        at: now,
      });
    } else if (i % 20 === 5) {
      await store.leave({ connectionId, entry, at: now });
    }
    templates.push((await store.getEntry(entry)) as EntryRecord);
  }
  const items = Array.from({ length: entries }, (_, i) => {
    const template = templates[i % TEMPLATES] as EntryRecord;
    const ip = benchIp(i);
    const name = `bench-${ip}`;
    const labels = { app: i % 3 === 0 ? 'api' : 'web', shard: String(i % 8) };
    return encodeEntry({
      ...template,
      entry: {
        ...template.entry,
        metadata: { ...template.entry.metadata, name, labels },
        spec: { ...template.entry.spec, address: ip, labels },
      },
    });
  });
  for (let start = 0; start < items.length; start += 25) {
    let pending = items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } }));
    while (pending.length > 0) {
      const answer = await client.send(new BatchWriteCommand({ RequestItems: { bench: pending } }));
      pending = (answer.UnprocessedItems?.bench ?? []) as typeof pending;
    }
  }
}

export interface DashboardStep {
  step: string;
  ms: number;
  bytes: number;
  rows: number;
}

export interface DashboardListCost {
  entries: number;
  seedS: number;
  steps: DashboardStep[];
  /** The cold read of the namespace (one paged Query): requests and items. */
  requests: Record<string, number>;
  itemsRead: number;
}

/**
 * `registrar dashboard` opening a namespace of `entries` VMs (issue 28: 20,000 in under a second):
 * entries as the connect path writes them, in dynalite, the real server over HTTP. Measured
 * cold (a server that has read nothing: the first page by name comes from one short Query, a
 * filter waits for the whole namespace's read), then as a person uses it (the namespace read:
 * sort, filter and page are served from memory), and the overview of a server that has read
 * nothing, then a namespace opened from it.
 */
export async function measureDashboardList(entries = 20_000): Promise<DashboardListCost> {
  const dynamo = await startDynalite();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const servers: RunningDashboard[] = [];
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const store = composeRegistry(client, 'bench');
    const now = Date.now();
    const seedStart = performance.now();
    await store.applyGroup(BENCH_GROUP); // indexes the namespace, as an operator's apply does
    await seed(client, store, entries, now);
    const seedS = (performance.now() - seedStart) / 1000;

    const assets = await loadAssets();
    const sources: DashboardSources = {
      catalog: store,
      disruption: store,
      sweepRuns: new DynamoDbSweepRuns(client, 'bench'),
      firstEntries: (namespace, limit) =>
        new DynamoDbEntryPages(client, 'bench').firstEntries(namespace, limit),
      refusals: noRefusals('benchmark'),
      target: 'bench',
      now: () => Date.now(),
    };
    const serve = async () => {
      const server = await startDashboardServer({
        data: new DashboardData(sources, 5_000),
        assets,
        address: '127.0.0.1',
        port: 0,
        refreshMs: 5_000,
      });
      servers.push(server);
      return server.url.replace(/\/$/, '');
    };
    const steps: DashboardStep[] = [];
    const get = async (base: string, step: string, path: string) => {
      const started = performance.now();
      const response = await fetch(`${base}${path}`);
      const body = await response.text();
      const ms = performance.now() - started;
      if (!response.ok) throw new Error(`${path}: ${response.status} ${body}`);
      const parsed = JSON.parse(body) as { rows?: unknown[]; cells?: unknown[] };
      steps.push({
        step,
        ms,
        bytes: body.length,
        rows: (parsed.rows ?? parsed.cells ?? []).length,
      });
    };

    const counter = countRequests(raw);
    const cold = await serve();
    await get(
      cold,
      'open the namespace, never read: its first page by name',
      '/api/entries?namespace=bench',
    );
    await get(
      cold,
      'a filter on it: waits for the whole read',
      '/api/entries?namespace=bench&health=unhealthy',
    );
    const requests = counter.counts();
    const itemsRead = counter.itemsRead();
    await get(cold, 'open it again (read before)', '/api/entries?namespace=bench');
    await get(
      cold,
      'sort by ADDRESS, descending',
      '/api/entries?namespace=bench&sort=address&order=desc',
    );
    await get(cold, 'sort by AGE', '/api/entries?namespace=bench&sort=age');
    await get(cold, 'filter: unhealthy', '/api/entries?namespace=bench&health=unhealthy');
    await get(
      cold,
      'filter: disconnected, by name',
      '/api/entries?namespace=bench&connection=disconnected&q=10.0.',
    );
    await get(cold, 'filter: label selector', '/api/entries?namespace=bench&selector=app%21%3Dweb');
    await get(
      cold,
      'a page in the middle',
      `/api/entries?namespace=bench&page=${Math.ceil(entries / 100)}`,
    );
    await get(cold, 'one entry', '/api/entry?namespace=bench&name=bench-10.0.0.7');
    const fresh = await serve();
    await get(fresh, 'overview, cold (reads every namespace)', '/api/overview');
    await get(fresh, 'then open the namespace', '/api/entries?namespace=bench');
    return { entries, seedS, steps, requests, itemsRead };
  } finally {
    for (const server of servers) await server.close();
    raw.destroy();
    await dynamo.close();
  }
}
