import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IncompatibleTableError, type SchemaRecord } from '../../lib/domain/table-schema.ts';
import {
  checkTable,
  type MigrationDeps,
  runMigrations,
} from '../../lib/registration/run-migrations.ts';
import type { Migration } from '../../lib/registration/schema-store.ts';
import { RELEASE } from '../../lib/release.ts';
import { registryMigrations } from '../../lib/store/dynamodb-migrations.ts';
import { DynamoDbSchemaStore, SCHEMA_KEY } from '../../lib/store/dynamodb-schema-store.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import {
  type FreshRegistry,
  freshRegistry,
  startTestDynamo,
  type TestDynamo,
} from '../fixtures/dynamo.ts';

/**
 * The migration runner and the registry's migrations over real DynamoDB semantics (dynalite,
 * or DynamoDB Local), each on a fresh table shaped as earlier releases left it: zone-wide
 * fail-static counters beside the per-namespace ones.
 */
let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(() => dynamo?.close());

const NOW = Date.UTC(2026, 11, 1);

async function table(): Promise<
  FreshRegistry & { deps: (over?: Partial<MigrationDeps>) => MigrationDeps }
> {
  const fresh = await freshRegistry(dynamo.endpoint, 'migrate');
  const schema = new DynamoDbSchemaStore(fresh.client, fresh.tableName);
  const migrations = registryMigrations(fresh.client, fresh.tableName);
  return {
    ...fresh,
    deps: (over = {}) => ({
      schema,
      migrations,
      release: RELEASE,
      now: () => NOW,
      outOfTime: () => false,
      ...over,
    }),
  };
}

/** What releases before 0.1 wrote: a zone-wide counter (`ZONE / <zone>`, no namespace). */
async function putLegacyCounter(t: FreshRegistry, zone: string, pk = 'ZONE'): Promise<void> {
  await t.client.send(
    new PutCommand({ TableName: t.tableName, Item: { pk, sk: zone, connected: 4, away: 1 } }),
  );
}

async function item(t: FreshRegistry, pk: string, sk: string) {
  const { Item } = await t.client.send(new GetCommand({ TableName: t.tableName, Key: { pk, sk } }));
  return Item;
}

describe("the registry's migrations", () => {
  it('bring a table of 0.1 to this schema with Queries only, and record it', async () => {
    const t = await table();
    await putLegacyCounter(t, 'eu-west-1/eu-west-1a');
    await putLegacyCounter(t, 'eu-west-1/eu-west-1b', 'ZONE#3');
    await t.client.send(
      new PutCommand({
        TableName: t.tableName,
        Item: { pk: 'ZONE#3', sk: 'shop#eu-west-1/eu-west-1b', connected: 5, away: 0 },
      }),
    );
    const counter = countRequests(t.client);

    const run = await runMigrations(t.deps());

    expect(run.completed).toEqual(['zone-counters-per-namespace']);
    expect(run.pending).toEqual([]);
    expect(run.record).toMatchObject({
      schema: 2,
      readableFrom: 1,
      writtenBy: RELEASE,
      lastRunBy: RELEASE,
    });
    expect(run.record.history.map((h) => [h.id, h.name, h.items, h.writes])).toEqual([
      [2, 'zone-counters-per-namespace', 3, 2],
    ]);
    // No Scan: a Query per counter partition (33), the record read once and saved.
    expect(counter.counts()).toEqual({ GetItem: 1, Query: 33, DeleteItem: 2, PutItem: 1 });
    // Zone-wide counters gone, the namespace's kept.
    expect(await item(t, 'ZONE', 'eu-west-1/eu-west-1a')).toBeUndefined();
    expect(await item(t, 'ZONE#3', 'eu-west-1/eu-west-1b')).toBeUndefined();
    expect(await item(t, 'ZONE#3', 'shop#eu-west-1/eu-west-1b')).toMatchObject({ connected: 5 });
  });

  it('are idempotent: a second run reads the record and writes nothing', async () => {
    const t = await table();
    await putLegacyCounter(t, 'eu-west-1/eu-west-1a');
    await runMigrations(t.deps());
    const counter = countRequests(t.client);
    const again = await runMigrations(t.deps());
    expect(again.pages).toBe(0);
    expect(counter.counts()).toEqual({ GetItem: 1 });
    // A page done again after a crash (before its progress was saved) changes nothing more.
    const [counters] = registryMigrations(t.client, t.tableName);
    expect(await counters?.step(undefined)).toEqual({ items: 0, writes: 0 });
  });

  it('resume where a run stopped: each item is visited once over two runs', async () => {
    const t = await table();
    await Promise.all(
      Array.from({ length: 250 }, (_, i) =>
        putLegacyCounter(t, `zone-${String(i).padStart(3, '0')}`),
      ),
    );
    let pagesLeft = 1;
    const first = await runMigrations(t.deps({ outOfTime: () => pagesLeft-- <= 0 }));
    expect(first.pending).toEqual(['zone-counters-per-namespace']);
    expect(first.record.running).toMatchObject({ id: 2, items: 100, writes: 100, by: RELEASE });
    expect(first.record.running?.cursor).toEqual(expect.any(String));

    const second = await runMigrations(t.deps());
    expect(second.pending).toEqual([]);
    expect(second.record.history[0]).toMatchObject({
      name: 'zone-counters-per-namespace',
      items: 250,
      writes: 250,
    });
    expect(second.record.running).toBeUndefined();
    const { Items } = await t.client.send(
      new QueryCommand({
        TableName: t.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': 'ZONE' },
      }),
    );
    expect(Items).toEqual([]);
  });

  it('let two runners overlap without losing or repeating a migration', async () => {
    const t = await table();
    await Promise.all(Array.from({ length: 120 }, (_, i) => putLegacyCounter(t, `zone-${i}`)));
    const [a, b] = await Promise.all([runMigrations(t.deps()), runMigrations(t.deps())]);
    const record = await new DynamoDbSchemaStore(t.client, t.tableName).read();
    expect(record?.schema).toBe(2);
    expect(record?.history.map((h) => h.id)).toEqual([2]);
    expect([...a.completed, ...b.completed]).toEqual(['zone-counters-per-namespace']);
  });
});

describe('a table written by another release', () => {
  const future: Omit<SchemaRecord, 'revision'> = {
    schema: 9,
    readableFrom: 9,
    writtenBy: '9.0.0',
    lastRunBy: '9.0.0',
    lastRunAt: NOW,
    history: [],
  };

  it('is refused when it cannot be read by this code, naming both releases, and nothing is written', async () => {
    const t = await table();
    await t.client.send(
      new PutCommand({ TableName: t.tableName, Item: { ...SCHEMA_KEY, ...future, revision: 4 } }),
    );
    await putLegacyCounter(t, 'eu-west-1/eu-west-1a');
    const counter = countRequests(t.client);
    const message = `this table was written by registrar 9.0.0 (schema 9), which code older than schema 9 cannot read; this is registrar ${RELEASE} (schema 2): run 9.0.0 or newer, or restore the table from a backup taken before the upgrade (docs/deploy.md, rolling back)`;
    await expect(checkTable(t.deps())).rejects.toThrow(new IncompatibleTableError(message));
    await expect(runMigrations(t.deps())).rejects.toThrow(message);
    expect(Object.keys(counter.counts())).toEqual(['GetItem']);
    expect(await item(t, 'ZONE', 'eu-west-1/eu-west-1a')).toMatchObject({ connected: 4 });
  });

  it('is run on when its newer migrations kept older readers (a rollback), naming the newer release still', async () => {
    const t = await table();
    await t.client.send(
      new PutCommand({
        TableName: t.tableName,
        Item: { ...SCHEMA_KEY, ...future, readableFrom: 1, revision: 4 },
      }),
    );
    const run = await runMigrations(t.deps());
    expect(run.pages).toBe(0);
    expect(run.record).toMatchObject({ writtenBy: '9.0.0', lastRunBy: RELEASE, schema: 9 });
  });

  it('is refused by older code once a migration that breaks older readers has started, before its first item changes', async () => {
    const t = await table();
    const schema = new DynamoDbSchemaStore(t.client, t.tableName);
    const seen: (number | undefined)[] = [];
    const breaking: Migration = {
      id: 4,
      name: 'breaking',
      summary: 'a change older code cannot read',
      keepsOlderReaders: false,
      step: async () => {
        seen.push((await schema.read())?.readableFrom);
        return { items: 1, writes: 1 };
      },
    };
    const newer = t.deps({
      migrations: [...registryMigrations(t.client, t.tableName), breaking],
      release: '1.0.0',
    });
    await runMigrations(newer);
    expect(seen).toEqual([4]);
    await expect(checkTable(t.deps())).rejects.toThrow(
      `this table was written by registrar 1.0.0 (schema 4), which code older than schema 4 cannot read; this is registrar ${RELEASE} (schema 2)`,
    );
  });
});
