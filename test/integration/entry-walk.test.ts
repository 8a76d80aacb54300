import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryPage } from '../../lib/store/dynamodb-entry-walk.ts';
import { DynamoDbNamespaceIndex } from '../../lib/store/dynamodb-namespace-index.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import {
  type FreshRegistry,
  freshRegistry,
  startTestDynamo,
  type TestDynamo,
} from '../fixtures/dynamo.ts';

/**
 * The pages a migration of entries walks (real DynamoDB semantics: dynalite, or DynamoDB
 * Local): every entry once, across namespaces, nothing else, resumable from any cursor.
 */
let dynamo: TestDynamo;
let t: FreshRegistry;
const ENTRIES: Record<string, number> = { alpha: 250, beta: 0, gamma: 3 };

beforeAll(async () => {
  dynamo = await startTestDynamo();
  t = await freshRegistry(dynamo.endpoint, 'entry-pages');
  const index = new DynamoDbNamespaceIndex(t.client, t.tableName);
  const put = (pk: string, sk: string) =>
    t.client.send(new PutCommand({ TableName: t.tableName, Item: { pk, sk } }));
  for (const [namespace, count] of Object.entries(ENTRIES)) {
    await index.record(namespace);
    await put(`NS#${namespace}`, 'WG#web');
    await Promise.all(
      Array.from({ length: count }, (_, i) => put(`NS#${namespace}`, `WE#web-${i}`)),
    );
  }
  await put('TOKEN', 'tok1');
});
afterAll(() => dynamo?.close());

async function walk(limit: number): Promise<{ seen: string[]; pages: number }> {
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    // Through JSON, as the schema record keeps it between sweeper runs.
    const page = await entryPage(
      t.client,
      t.tableName,
      cursor && JSON.parse(JSON.stringify(cursor)),
      limit,
    );
    pages += 1;
    seen.push(...page.items.map((item) => `${item.pk}/${item.sk}`));
    cursor = page.cursor;
  } while (cursor);
  return { seen, pages };
}

describe('entry pages', () => {
  it('visit every entry once, in every namespace, and nothing but entries', async () => {
    const { seen, pages } = await walk(100);
    expect(seen).toHaveLength(253);
    expect(new Set(seen).size).toBe(253);
    expect(seen.every((key) => key.includes('/WE#'))).toBe(true);
    // alpha in 3 pages, beta (a group, no entry) skipped within gamma's page.
    expect(pages).toBe(4);
  });

  it('read by Queries only', async () => {
    const counter = countRequests(t.client);
    await walk(100);
    expect(Object.keys(counter.counts())).toEqual(['Query']);
  });

  it('end at once on a table without namespaces', async () => {
    const empty = await freshRegistry(dynamo.endpoint, 'entry-pages-empty');
    expect(await entryPage(empty.client, empty.tableName, undefined)).toEqual({ items: [] });
  });
});
