import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper.ts';
import { readConfig } from '../../lib/config.ts';
import type { Dependencies } from '../../lib/dependencies.ts';
import { queryItems } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbSweepRuns, RUN_SLOTS } from '../../lib/store/dynamodb-sweep-runs.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import type { SweepRun, SweepRunStore } from '../../lib/sweep/sweep-run-store.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * The sweeper's recent runs, kept for `registrar dashboard`: a ring of RUN_SLOTS items written
 * once per run, over real dynalite. The Lambda contexts are test doubles (no Lambda runs here).
 */
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MINUTE = 60_000;

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

function run(at: number, deleted = 0, extra: Partial<SweepRun> = {}): SweepRun {
  return {
    at,
    deleted,
    conflicts: 0,
    candidatesRead: deleted,
    livenessChecked: 0,
    livenessUnknown: 0,
    phantomsDropped: 0,
    stoppedEarly: false,
    failed: 0,
    mode: 'normal',
    held: 0,
    slowed: 0,
    ...extra,
  };
}

async function itemsOfRing(registry: { client: TestDynamo['client']; tableName: string }) {
  const items = [];
  const query = queryItems(registry.client, {
    TableName: registry.tableName,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :run)',
    ExpressionAttributeValues: { ':pk': 'SWEEPER', ':run': 'run#' },
  });
  for await (const item of query) items.push(item);
  return items;
}

describe('the sweeper runs ring', () => {
  it('keeps each run, oldest first, with what it did', async () => {
    const registry = await freshRegistry(dynamo.endpoint);
    const runs = new DynamoDbSweepRuns(registry.client, registry.tableName, MINUTE);
    await runs.record(run(T0 + MINUTE, 3, { stoppedEarly: true, mode: 'held', held: 7 }));
    await runs.record(run(T0, 1));
    expect(await runs.recent(0)).toEqual([
      run(T0, 1),
      run(T0 + MINUTE, 3, { stoppedEarly: true, mode: 'held', held: 7 }),
    ]);
  });

  it("adds a second run of the same interval to the first, so neither run's deletions vanish", async () => {
    const registry = await freshRegistry(dynamo.endpoint);
    const runs = new DynamoDbSweepRuns(registry.client, registry.tableName, MINUTE);
    // A run that deleted a VM, then a run caught up within the same minute that deleted none.
    await runs.record(run(T0 + 1_000, 1, { livenessChecked: 2 }));
    await runs.record(run(T0 + 30_000, 0, { livenessChecked: 3, mode: 'held' }));
    expect(await runs.recent(0)).toEqual([
      run(T0 + 30_000, 1, { livenessChecked: 5, mode: 'held' }),
    ]);
    // The next interval starts its own count.
    await runs.record(run(T0 + MINUTE, 0));
    expect((await runs.recent(0)).map((r) => r.deleted)).toEqual([1, 0]);
  });

  it('never holds more than RUN_SLOTS items, however many runs there were', async () => {
    const registry = await freshRegistry(dynamo.endpoint);
    const runs = new DynamoDbSweepRuns(registry.client, registry.tableName, MINUTE);
    const total = RUN_SLOTS + 30;
    for (let i = 0; i < total; i++) await runs.record(run(T0 + i * MINUTE, i));
    expect(await itemsOfRing(registry)).toHaveLength(RUN_SLOTS);
    const kept = await runs.recent(0);
    // The oldest 30 were overwritten by the newest 30.
    expect(kept[0]?.deleted).toBe(30);
    expect(kept.at(-1)?.deleted).toBe(total - 1);
  });

  it('drops runs older than asked: a gap in the runs leaves old slots behind', async () => {
    const registry = await freshRegistry(dynamo.endpoint);
    const runs = new DynamoDbSweepRuns(registry.client, registry.tableName, MINUTE);
    await runs.record(run(T0, 1));
    // A day later (the sweeper was off): a new run lands in another slot.
    await runs.record(run(T0 + 24 * 60 * MINUTE + 7 * MINUTE, 2));
    const recent = await runs.recent(T0 + 24 * 60 * MINUTE);
    expect(recent.map((r) => r.deleted)).toEqual([2]);
  });

  it('skips an item it cannot read instead of showing it half-read', async () => {
    const registry = await freshRegistry(dynamo.endpoint);
    const runs = new DynamoDbSweepRuns(registry.client, registry.tableName, MINUTE);
    await runs.record(run(T0, 4));
    const { PutCommand } = await import('@aws-sdk/lib-dynamodb');
    await registry.client.send(
      new PutCommand({
        TableName: registry.tableName,
        Item: { pk: 'SWEEPER', sk: 'run#999', at: 'yesterday' },
      }),
    );
    expect((await runs.recent(0)).map((r) => r.deleted)).toEqual([4]);
  });

  it('refuses a slot width that is not a positive duration', async () => {
    const registry = await freshRegistry(dynamo.endpoint);
    expect(() => new DynamoDbSweepRuns(registry.client, registry.tableName, 0)).toThrow(
      /slotMs must be a positive number of milliseconds, got 0/,
    );
  });
});

describe('the sweeper function records each run', () => {
  function dependencies(
    registry: Awaited<ReturnType<typeof freshRegistry>>,
    sweepRuns: SweepRunStore,
    now: () => number,
  ): Dependencies {
    return {
      ...NO_CAPABILITIES,
      config: readConfig({
        REGISTRAR_TABLE: registry.tableName,
        REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
      }),
      store: registry.store,
      tokens: new DynamoDbTokenStore(registry.client, registry.tableName),
      ...sweeperRecordsInMemory(),
      sweepRuns,
      now,
    };
  }

  it('writes one summary per run, as the run returned it', async () => {
    const registry = await freshRegistry(dynamo.endpoint);
    const runs = new DynamoDbSweepRuns(registry.client, registry.tableName, MINUTE);
    const sweeper = createSweeperHandler(dependencies(registry, runs, () => T0));
    const summary = await sweeper({}, lambdaContext('sweeper'));
    const recorded = await runs.recent(0);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({
      at: T0,
      deleted: summary.deleted,
      candidatesRead: summary.candidatesRead,
      mode: summary.mode,
    });
  });

  it('still sweeps when the summary cannot be written', async () => {
    const registry = await freshRegistry(dynamo.endpoint);
    const failing: SweepRunStore = {
      record: () => Promise.reject(new Error('ProvisionedThroughputExceededException')),
      recent: () => Promise.resolve([]),
    };
    const sweeper = createSweeperHandler(dependencies(registry, failing, () => T0));
    await expect(sweeper({}, lambdaContext('sweeper'))).resolves.toMatchObject({
      mode: 'normal',
    });
  });
});
