import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateWindow } from '../../lib/domain/connect-rate.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbConnectRate } from '../../lib/store/dynamodb-connect-rate.ts';
import { ensureTable } from '../../lib/store/ensure-table.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { type FaultProxy, seededRandom, startFaultProxy } from '../fixtures/fault-proxy.ts';

/**
 * The connect-rate counters behind the `connect-rate` quota, on the real store behind a proxy
 * that counts and fails requests: exact budgets, no request once a window is known full, and
 * a counter write whose response was lost (the SDK sends it again) counted once.
 */
let dynamo: TestDynamo;
let proxy: FaultProxy;
let rate: DynamoDbConnectRate;
const TABLE = `rate-${randomUUID()}`;
const AT = 1_767_225_600_000; // 2026-01-01T00:00:00Z, the start of a window of every length

beforeAll(async () => {
  dynamo = await startTestDynamo();
  proxy = await startFaultProxy(dynamo.endpoint, 11);
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: proxy.endpoint });
  await ensureTable(raw, TABLE);
  rate = new DynamoDbConnectRate(documentClientFor(raw), TABLE, seededRandom(3));
});
afterAll(async () => {
  await proxy?.close();
  await dynamo?.close();
});

/** Connects counted for a namespace, summed over its shards' items of every window. */
async function counted(namespace: string): Promise<number> {
  let sum = 0;
  for (let shard = 0; shard < 8; shard++) {
    const { Items = [] } = await dynamo.client.send(
      new QueryCommand({
        TableName: TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `RATE#${namespace}#${shard}` },
      }),
    );
    for (const item of Items) sum += Number(item.connects ?? 0);
  }
  return sum;
}

describe('connect-rate counters', () => {
  it('admits exactly the window budget across shards, then refuses (one function instance)', async () => {
    // 40/s: 40 connects a 1 s window, over 8 shards of 5.
    expect(rateWindow(40, AT)).toMatchObject({ budget: 40, shards: 8 });
    const outcomes: boolean[] = [];
    for (let i = 0; i < 60; i++) outcomes.push(await rate.admit('storm', 40, AT + 10, `c-${i}`));

    expect(outcomes.filter(Boolean)).toHaveLength(40);
    expect(await counted('storm')).toBe(40);
  });

  it('never admits more than the budget, however many instances race for it', async () => {
    const clients = Array.from({ length: 20 }, () =>
      documentClientFor(createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint })),
    );
    const instances = clients.map(
      (client, i) => new DynamoDbConnectRate(client, TABLE, seededRandom(100 + i)),
    );
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        (instances[i % 20] as DynamoDbConnectRate).admit('race', 40, AT + 10, `r-${i}`),
      ),
    ).finally(() => {
      for (const client of clients) client.destroy();
    });

    const admitted = outcomes.filter(Boolean).length;
    expect(admitted).toBeLessThanOrEqual(40);
    expect(await counted('race')).toBe(admitted);
  });

  it('costs no request once every shard of the window is known full, and admits again in the next window', async () => {
    const before = proxy.counts.forwarded;
    for (let i = 0; i < 20; i++) {
      expect(await rate.admit('storm', 40, AT + 500, `late-${i}`)).toBe(false);
    }
    expect(proxy.counts.forwarded).toBe(before);

    expect(await rate.admit('storm', 40, AT + 1000, 'next-window')).toBe(true);
  });

  it('counts a connect once when its write was applied but the answer lost (the SDK retries it)', async () => {
    proxy.plan = {
      rate: 1,
      when: 'after',
      kind: 'internal',
      limit: proxy.counts.failedAfter + proxy.counts.failedBefore + 1,
      match: (operation, body) => operation === 'UpdateItem' && body.includes('"RATE#'),
    };

    expect(await rate.admit('retried', 40, AT, 'conn-1')).toBe(true);

    expect(proxy.counts.failedAfter).toBeGreaterThan(0);
    expect(await counted('retried')).toBe(1);
    proxy.plan = { rate: 0, when: 'before', kind: 'internal' };
  });

  it('does not admit on a write that failed before it was applied and kept failing', async () => {
    proxy.plan = {
      rate: 1,
      when: 'before',
      kind: 'internal',
      match: (operation, body) => operation === 'UpdateItem' && body.includes('"RATE#failing'),
    };

    await expect(rate.admit('failing', 40, AT, 'conn-2')).rejects.toThrow();

    expect(await counted('failing')).toBe(0);
    proxy.plan = { rate: 0, when: 'before', kind: 'internal' };
  });

  it('gives a slow rate a window long enough for one connect', async () => {
    // 3/m = 0.05/s: one connect per 20 s window.
    expect(rateWindow(0.05, AT)).toMatchObject({ lengthMs: 20_000, budget: 1, shards: 1 });
    expect(await rate.admit('slow', 0.05, AT + 1_000, 'a')).toBe(true);
    expect(await rate.admit('slow', 0.05, AT + 19_000, 'b')).toBe(false);
    expect(await rate.admit('slow', 0.05, AT + 20_000, 'c')).toBe(true);
  });
});
