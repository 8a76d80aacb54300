import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildRegistration } from '../../lib/domain/build-entry.ts';
import { entryOrigin } from '../../lib/domain/entry-name.ts';
import { InvalidRequestError } from '../../lib/domain/errors.ts';
import type { ConnectRequest, WorkloadGroup } from '../../lib/domain/model.ts';
import { AGENT_LABELS_MAX, groupSizeRefusal } from '../../lib/store/catalog-item-limits.ts';
import { DynamoDbCatalog } from '../../lib/store/dynamodb-catalog.ts';
import { groupKey } from '../../lib/store/item-codec.ts';
import { itemSize, MAX_ITEM_BYTES } from '../../lib/store/item-size.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * DynamoDB's 400 KB item limit, over a real table (dynalite): the estimate agrees with what
 * the table counts, an object over the limit is refused naming its largest field before any
 * write, and a group that is accepted builds entries that fit whatever its agents add.
 */

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const WRITES = ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems'];

let dynamo: TestDynamo;
let catalog: DynamoDbCatalog;
let counter: RequestCounter;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  catalog = new DynamoDbCatalog(dynamo.client, dynamo.tableName);
  counter = countRequests(dynamo.client);
});

afterAll(async () => {
  await dynamo?.close();
});

beforeEach(() => {
  counter.reset();
});

function writes(): number {
  const counts = counter.counts();
  return WRITES.reduce((sum, command) => sum + (counts[command] ?? 0), 0);
}

function manyLabels(count: number, valueLength = 60): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`l${i}`, 'v'.repeat(valueLength)]),
  );
}

function group(name: string, labels: Record<string, string>): WorkloadGroup {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name, namespace: 'shop' },
    spec: { template: { ports: { http: 8080 }, labels } },
  };
}

/** An item of exactly `bytes` by the estimate: keys, a label-like map and one filler string. */
function itemOf(bytes: number, sk: string): Record<string, unknown> {
  const item: Record<string, unknown> = {
    pk: 'NS#size',
    sk,
    labels: manyLabels(100),
    conns: new Set(['conn-1', 'conn-2']),
    flag: true,
    filler: '',
  };
  item.filler = 'f'.repeat(bytes - itemSize(item));
  expect(itemSize(item)).toBe(bytes);
  return item;
}

describe('the item size estimate', () => {
  it('never refuses what DynamoDB accepts: an item estimated at exactly 400 KB is stored', async () => {
    const item = itemOf(MAX_ITEM_BYTES, 'at-limit');
    await dynamo.client.send(new PutCommand({ TableName: dynamo.tableName, Item: item }));
    const { Item } = await dynamo.client.send(
      new GetCommand({ TableName: dynamo.tableName, Key: { pk: 'NS#size', sk: 'at-limit' } }),
    );
    expect(Item?.filler).toBe(item.filler);
  });

  it('is close: an item estimated 64 bytes over 400 KB is refused by the table', async () => {
    const item = itemOf(MAX_ITEM_BYTES + 64, 'over-limit');
    await expect(
      dynamo.client.send(new PutCommand({ TableName: dynamo.tableName, Item: item })),
    ).rejects.toThrow(/Item size has exceeded the maximum allowed size/);
  });
});

describe('the catalog refuses an object over 400 KB before writing', () => {
  it('refuses a WorkloadGroup naming its largest field, and sends no write', async () => {
    const error = await catalog.applyGroup(group('huge', manyLabels(6500))).catch((e) => e);

    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).field).toBe('spec.template.labels');
    expect((error as Error).message).toMatch(
      /^workloadgroup shop\/huge: spec\.template\.labels is 4\d\d(\.\d)? KB \(the whole WorkloadGroup 4\d\d(\.\d)? KB\); a WorkloadGroup is stored as one DynamoDB item, which must stay under 400 KB: make it smaller$/,
    );
    expect(writes()).toBe(0);
    expect(await catalog.getGroup({ namespace: 'shop', name: 'huge' })).toBeUndefined();
  });

  it('refuses a WorkloadGroup that fits but whose entries would not, and sends no write', async () => {
    const error = await catalog.applyGroup(group('wide', manyLabels(3000))).catch((e) => e);

    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as Error).message).toMatch(
      /^workloadgroup shop\/wide: spec\.template\.labels is \d+(\.\d)? KB: each WorkloadEntry of this group holds its template, its annotations and its labels twice/,
    );
    expect(writes()).toBe(0);
    const { Item } = await dynamo.client.send(
      new GetCommand({ TableName: dynamo.tableName, Key: groupKey(group('wide', {}).metadata) }),
    );
    expect(Item).toBeUndefined();
  });

  it('refuses a hand-made WorkloadEntry naming its largest field, and sends no write', async () => {
    const error = await catalog
      .applyEntry({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: {
          name: 'db-1',
          namespace: 'shop',
          annotations: { 'example.com/notes': 'n'.repeat(420_000) },
        },
        spec: { address: '10.0.0.5' },
      })
      .catch((e) => e);

    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as Error).message).toBe(
      'workloadentry shop/db-1: metadata.annotations["example.com/notes"] is 410.2 KB (the whole WorkloadEntry 410.5 KB); a WorkloadEntry is stored as one DynamoDB item, which must stay under 400 KB: make it smaller',
    );
    expect(writes()).toBe(0);
    expect(await catalog.listEntries('shop')).toEqual([]);
  });
});

describe('an accepted group builds entries that fit', () => {
  it('stores the entry of the largest accepted group for an agent that sends the most it may', async () => {
    // The largest label map the group check accepts (a binary search over its label count).
    let [accepted, refused] = [0, 6500];
    while (refused - accepted > 1) {
      const middle = Math.floor((accepted + refused) / 2);
      if (groupSizeRefusal(group('edge', manyLabels(middle)))) refused = middle;
      else accepted = middle;
    }
    const count = accepted;
    const edge = group('edge', manyLabels(count));
    const applied = await catalog.applyGroup(edge);
    expect(applied.outcome).toBe('created');

    // Protocol v1's most: 64 labels with the longest key and value, the longest locality.
    const agentLabels = Object.fromEntries(
      Array.from({ length: AGENT_LABELS_MAX }, (_, i) => [
        `${'p'.repeat(253)}/${String(i).padStart(63, 'k')}`,
        'v'.repeat(63),
      ]),
    );
    const request: ConnectRequest = {
      group: 'edge',
      namespace: 'shop',
      ips: ['fd00:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
      network: 'n'.repeat(63),
      locality: `${'r'.repeat(63)}/${'z'.repeat(63)}/${'s'.repeat(63)}`,
      labels: agentLabels,
    };
    const built = buildRegistration(applied.group, request, T0);
    const store = composeRegistry(dynamo.client, dynamo.tableName);
    const outcome = await store.connect({
      ...built,
      origin: entryOrigin('edge', request.ips[0] ?? '', request.network),
      mayCreate: true,
      recordConnection: true,
      groupGeneration: 1,
      connectionId: 'L0SM9cOFvHcCIhw=',
      connectedAt: T0,
      controller: 'workload-registrar',
      identity: {
        principal: `arn:aws:sts::123456789012:assumed-role/${'r'.repeat(64)}/i-0123456789abcdef0`,
        namespace: 'shop',
      },
    });

    expect(outcome).toBe('created');
    const stored = await store.getEntry(built.entry.metadata);
    expect(Object.keys(stored?.entry.spec.labels ?? {})).toHaveLength(count + AGENT_LABELS_MAX);
  });
});
