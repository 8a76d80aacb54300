import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper.ts';
import { type Dependencies, dependenciesFromEnv } from '../../lib/dependencies.ts';
import { RELEASE } from '../../lib/release.ts';
import { SCHEMA_KEY } from '../../lib/store/dynamodb-schema-store.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';

/**
 * The sweeper as the deployed one runs: the Lambda wiring (dependenciesFromEnv) over a real
 * table (dynalite, or DynamoDB Local). It records the release, runs pending migrations with
 * the time its sweep leaves, and refuses a table it cannot read before deleting anything. The
 * Lambda context is a stand-in (no Lambda runs here).
 */
let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(() => dynamo?.close());

const NOW = Date.UTC(2026, 11, 1, 12);

async function sweeperOn(): Promise<{
  deps: Dependencies;
  t: Awaited<ReturnType<typeof freshRegistry>>;
}> {
  const t = await freshRegistry(dynamo.endpoint, 'sweeper-migrate');
  const deps = dependenciesFromEnv({
    REGISTRAR_TABLE: t.tableName,
    REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
    REGISTRAR_GRACE_PERIOD: '5m',
  });
  deps.now = () => NOW;
  return { deps, t };
}

function contextWith(remainingMs: () => number): Context {
  return { ...lambdaContext('registrar-sweeper'), getRemainingTimeInMillis: remainingMs };
}

describe('the sweeper and the schema record', () => {
  it('records the release and completes the migrations with the time its sweep leaves', async () => {
    const { deps } = await sweeperOn();
    await createSweeperHandler(deps)(
      {},
      contextWith(() => 40_000),
    );
    expect(await deps.schema?.read()).toMatchObject({
      schema: 2,
      writtenBy: RELEASE,
      lastRunBy: RELEASE,
      history: [{ name: 'zone-counters-per-namespace' }],
    });
  });

  it('refuses a table written by a release it cannot read, and deletes nothing', async () => {
    const { deps, t } = await sweeperOn();
    // An entry disconnected an hour ago: due under any policy.
    const change = connectChange({
      name: 'web-10-0-0-1',
      namespace: 'shop',
      connectionId: 'c1',
      connectedAt: NOW - 7_200_000,
    });
    await t.store.connect(change);
    await t.store.leave({
      connectionId: 'c1',
      entry: change.entry.metadata,
      at: NOW - 3_600_000,
      departure: 'clean',
    });
    await t.client.send(
      new PutCommand({
        TableName: t.tableName,
        Item: {
          ...SCHEMA_KEY,
          schema: 7,
          readableFrom: 7,
          writtenBy: '3.0.0',
          lastRunBy: '3.0.0',
          lastRunAt: NOW,
          history: [],
          revision: 1,
        },
      }),
    );
    await expect(
      createSweeperHandler(deps)(
        {},
        contextWith(() => 40_000),
      ),
    ).rejects.toThrow(/^this table was written by registrar 3\.0\.0 \(schema 7\)/);
    expect(await t.store.getEntry(change.entry.metadata)).toBeDefined();
  });
});
