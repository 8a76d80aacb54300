import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queryObjects } from 'node:v8';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeIteratorsOnReturn } from '../../infra/local/dynalite-iterator-close.ts';
import { type RunningDynalite, startDynalite } from '../../infra/local/dynalite-server.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { ensureTable } from '../../lib/store/ensure-table.ts';

/**
 * The local store closes the LevelDB iterator of every read (infra/local/dynalite-iterator-
 * close.ts): dynalite 4 left each one open, and an idle `npm start` grew by the sweeper's reads
 * without bound. Counted exactly: the live iterator objects after a GC (`v8.queryObjects`), on
 * the on-disk store `npm start` uses, in this process.
 */

const requireCjs = createRequire(import.meta.url);
const fromDynalite = createRequire(requireCjs.resolve('dynalite'));
const { AbstractIterator, AbstractKeyIterator, AbstractValueIterator } = createRequire(
  fromDynalite.resolve('level'),
)('abstract-level') as Record<string, new (...args: never[]) => unknown>;

/** Open LevelDB iterators, of every kind, that nothing has let go of. */
function liveIterators(): number {
  const kinds = [AbstractIterator, AbstractKeyIterator, AbstractValueIterator];
  return kinds.reduce(
    (sum, kind) =>
      sum + (queryObjects(kind as NonNullable<typeof kind>, { format: 'count' }) as number),
    0,
  );
}

const dir = mkdtempSync(join(tmpdir(), 'store-iterators-'));
let store: RunningDynalite;
const client = () => documentClientFor(raw);
let raw: ReturnType<typeof createDynamoDbClient>;
const tableName = `registry-${randomUUID()}`;

beforeAll(async () => {
  store = await startDynalite({ dataDir: join(dir, 'dynalite') });
  raw = createDynamoDbClient({ region: 'us-east-1', endpoint: store.endpoint });
  await ensureTable(raw, tableName);
});

afterAll(async () => {
  raw?.destroy();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the local store', () => {
  it('keeps no LevelDB iterator open after its reads (a sweep reads this way every run)', async () => {
    const query = (pk: string) =>
      client().send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
        }),
      );
    await query('warm-up');
    const before = liveIterators();
    for (let i = 0; i < 200; i++) await query(`SWEEP#${i % 7}`);
    // Each query opened at least one; without the close they would all still be here.
    expect(liveIterators() - before).toBeLessThan(10);
  });

  it('installs the close once, however often a store starts', () => {
    expect(closeIteratorsOnReturn()).toBe(0);
  });
});
