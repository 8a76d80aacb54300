import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local-server.ts';
import { runMigrations } from '../lib/registration/run-migrations.ts';
import type { Migration } from '../lib/registration/schema-store.ts';
import { RELEASE } from '../lib/release.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { entryPage } from '../lib/store/dynamodb-entry-walk.ts';
import { registryMigrations } from '../lib/store/dynamodb-migrations.ts';
import { DynamoDbNamespaceIndex } from '../lib/store/dynamodb-namespace-index.ts';
import { DynamoDbSchemaStore } from '../lib/store/dynamodb-schema-store.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { itemSize } from '../lib/store/item-size.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { connectBenchVm, inBatches } from './bench-entries.ts';

/**
 * Migrations at fleet size, with the real runner and store against DynamoDB Local (or
 * dynalite): a table as 0.1 leaves it (no schema record) with N VMs connected, 20,000 to a
 * namespace, and their cell counters, then
 *
 * 1. this release's migrations (lib/store/dynamodb-migrations.ts), as the sweeper's first run
 *    after the deploy does them;
 * 2. a migration of every entry (a page of 100 entries read, each rewritten with one more
 *    attribute, 16 writes in flight), the kind a future release needs for a backfill: what the
 *    framework costs per entry. It runs as the sweeper runs it, in slices of SLICE_MS of real
 *    time (what a run at 100,000 VMs has left after its longest sweep, 19.5 s of 45 s:
 *    docs/benchmarks.md), each resuming from the cursor the last one saved.
 *
 * Reads and writes are counted on the wire; capacity units from the items' sizes (a Query
 * page costs its items' bytes / 4 KB, halved as eventually consistent; a write the larger of
 * the item before and after / 1 KB), priced as docs/cost.md prices them.
 */
export interface MigrationCostResult {
  vms: number;
  backend: string;
  seedSeconds: number;
  release: { seconds: number; requests: Record<string, number>; completed: string[] };
  perEntry: {
    seconds: number;
    slices: number;
    pages: number;
    items: number;
    writes: number;
    requests: Record<string, number>;
    rru: number;
    wru: number;
    dynamoUsd: number;
    lambdaUsd: number;
  };
}

const NAMESPACE_SIZE = 20_000;
const SLICE_MS = 25_000;
const WRITES_IN_FLIGHT = 16;
const RRU_USD = 0.125 / 1e6;
const WRU_USD = 0.625 / 1e6;
// The sweeper: 512 MB, arm64 (docs/cost.md).
const LAMBDA_GB_SECOND_USD = 0.0000133334 * 0.5;

export async function measureMigrationCost(
  vms: number,
  options: { backend?: 'dynamodb-local' | 'dynalite'; log?: (line: string) => void } = {},
): Promise<MigrationCostResult> {
  const backend = options.backend ?? 'dynamodb-local';
  const log = options.log ?? (() => {});
  const dynamo = backend === 'dynalite' ? await startDynalite() : await startDynamoDbLocal();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  try {
    const table = 'migrate';
    await ensureTable(raw, table);
    const client = documentClientFor(raw);
    const store = composeRegistry(client, table);
    const index = new DynamoDbNamespaceIndex(client, table);
    const namespaceOf = (i: number) => `ns-${Math.floor(i / NAMESPACE_SIZE)}`;
    for (let n = 0; n * NAMESPACE_SIZE < vms; n++) await index.record(`ns-${n}`);
    const seeded = Date.now();
    const at = Date.UTC(2026, 11, 1);
    await inBatches(vms, 64, (i) => connectBenchVm(store, i, at - (i % 6_000_000), namespaceOf(i)));
    const seedSeconds = (Date.now() - seeded) / 1000;
    log(`seeded ${vms} entries in ${seedSeconds.toFixed(0)} s`);

    const schema = new DynamoDbSchemaStore(client, table);
    const shipped = registryMigrations(client, table);
    const counter = countRequests(client);
    const releaseStarted = Date.now();
    const first = await runMigrations({
      schema,
      migrations: shipped,
      release: RELEASE,
      now: () => Date.now(),
      outOfTime: () => false,
    });
    const release = {
      seconds: (Date.now() - releaseStarted) / 1000,
      requests: counter.counts(),
      completed: first.completed,
    };
    log(`this release's migrations: ${JSON.stringify(release)}`);

    const cost = { rru: 0, wru: 0 };
    const touch = touchEveryEntry(client, table, cost);
    counter.reset();
    const started = Date.now();
    let slices = 0;
    let pages = 0;
    for (;;) {
      slices += 1;
      const sliceStarted = Date.now();
      const run = await runMigrations({
        schema,
        migrations: [...shipped, touch],
        release: RELEASE,
        now: () => Date.now(),
        outOfTime: () => Date.now() - sliceStarted > SLICE_MS,
      });
      pages += run.pages;
      log(
        `slice ${slices}: ${run.pages} pages, ${run.record.running?.items ?? run.record.history.at(-1)?.items} entries so far`,
      );
      if (run.pending.length === 0) break;
    }
    const seconds = (Date.now() - started) / 1000;
    const done = (await schema.read())?.history.find((h) => h.id === touch.id);
    return {
      vms,
      backend,
      seedSeconds,
      release,
      perEntry: {
        seconds,
        slices,
        pages,
        items: done?.items ?? 0,
        writes: done?.writes ?? 0,
        requests: counter.counts(),
        rru: cost.rru,
        wru: cost.wru,
        dynamoUsd: cost.rru * RRU_USD + cost.wru * WRU_USD,
        lambdaUsd: seconds * LAMBDA_GB_SECOND_USD,
      },
    };
  } finally {
    raw.destroy();
    await dynamo.close();
  }
}

/** A per-entry backfill: one attribute more on every entry, conditional, so a redo writes nothing. */
function touchEveryEntry(
  client: DynamoDBDocumentClient,
  table: string,
  cost: { rru: number; wru: number },
): Migration {
  return {
    id: 100,
    name: 'bench-touch-every-entry',
    summary: 'one attribute more on every entry (a benchmark of a per-entry backfill)',
    keepsOlderReaders: true,
    async step(cursor) {
      const page = await entryPage(client, table, cursor);
      const bytes = page.items.reduce((sum, item) => sum + itemSize(item), 0);
      cost.rru += Math.max(0.5, Math.ceil(bytes / 4096) / 2);
      let writes = 0;
      let next = 0;
      const worker = async () => {
        for (;;) {
          const item = page.items[next++];
          if (!item) return;
          if (item.benchTouched !== undefined) continue;
          writes += 1;
          cost.wru += Math.ceil((itemSize(item) + 16) / 1024);
          await client.send(
            new UpdateCommand({
              TableName: table,
              Key: { pk: item.pk, sk: item.sk },
              UpdateExpression: 'SET benchTouched = :one',
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeValues: { ':one': 1 },
            }),
          );
        }
      };
      await Promise.all(Array.from({ length: WRITES_IN_FLIGHT }, worker));
      return page.cursor === undefined
        ? { items: page.items.length, writes }
        : { cursor: page.cursor, items: page.items.length, writes };
    },
  };
}
