import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type EntryRecord, renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
import { ISTIO_API_VERSION, type WorkloadEntry } from '../../lib/domain/model.ts';
import { DynamoDbRegistryStore } from '../../lib/store/dynamodb-registry-store.ts';
import { entryKey, sweepShard } from '../../lib/store/item-codec.ts';
import type { ConnectChange } from '../../lib/store/registry-store.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

const NS = 'shop';
const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);

let dynamo: TestDynamo;
let store: DynamoDbRegistryStore;
let requests: RequestCounter;
let vmCount = 0;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = new DynamoDbRegistryStore(dynamo.client, dynamo.tableName);
  requests = countRequests(dynamo.client);
});
afterAll(async () => {
  await dynamo?.close();
});
beforeEach(() => {
  vmCount += 1;
});

/** A fresh entry name per test: all tests share one table. */
function vm(): string {
  return `web-10-0-0-${vmCount}`;
}

function template(name: string): WorkloadEntry {
  return {
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadEntry',
    metadata: {
      name,
      namespace: NS,
      labels: { app: 'web' },
      ownerReferences: [
        {
          apiVersion: ISTIO_API_VERSION,
          kind: 'WorkloadGroup',
          name: 'web',
          uid: 'g-1',
          controller: true,
        },
      ],
    },
    spec: {
      address: '10.0.0.1',
      labels: { app: 'web' },
      ports: { http: 8080 },
      serviceAccount: 'web',
    },
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function connectChange(name: string, connectionId: string, connectedAt: number): ConnectChange {
  return {
    entry: template(name),
    autoRegistrationGroup: 'web',
    healthChecksEnabled: true,
    groupGeneration: 1,
    connectionId,
    connectedAt,
    controller: 'workload-registrar',
    identity: { principal: 'token:t1', namespace: NS },
  };
}

async function rawItem(name: string) {
  const { Item } = await dynamo.client.send(
    new GetCommand({
      TableName: dynamo.tableName,
      Key: entryKey({ namespace: NS, name }),
      ConsistentRead: true,
    }),
  );
  return Item;
}

async function entryOf(name: string) {
  return store.getEntry({ namespace: NS, name });
}

describe('connect', () => {
  it('creates the entry from the template on the first connect', async () => {
    const name = vm();
    expect(await store.connect(connectChange(name, 'c1', T0))).toBe('created');
    const record = await entryOf(name);
    expect(record).toEqual({
      entry: template(name),
      autoRegistrationGroup: 'web',
      healthChecksEnabled: true,
      groupGeneration: 1,
      identity: { principal: 'token:t1', namespace: NS },
      connection: {
        controller: 'workload-registrar',
        connectedAt: T0,
        connectionIds: ['c1'],
        newestConnectionId: 'c1',
      },
      revision: 1,
    });
    expect(await store.getConnection('c1')).toEqual({
      connectionId: 'c1',
      entry: { namespace: NS, name },
      connectedAt: T0,
    });
  });

  it('changes only the connection state on a reconnect, never spec, labels or status', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    await store.disconnect({ connectionId: `${name}-a`, at: T0 + 10 });
    const changed = connectChange(name, `${name}-b`, T0 + 20);
    changed.entry.metadata.labels = { app: 'other' };
    changed.entry.spec.address = '10.9.9.9';
    changed.groupGeneration = 7;

    expect(await store.connect(changed)).toBe('reconnected');

    const record = await entryOf(name);
    expect(record?.entry).toEqual(template(name));
    expect(record?.groupGeneration).toBe(1);
    expect(record?.connection).toEqual({
      controller: 'workload-registrar',
      connectedAt: T0 + 20,
      connectionIds: [`${name}-b`],
      newestConnectionId: `${name}-b`,
    });
  });

  it('refuses a connect older than the recorded connect and writes nothing', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-new`, T0 + 100));
    requests.reset();

    expect(await store.connect(connectChange(name, `${name}-old`, T0 + 50))).toBe('stale');

    expect(requests.counts()).toEqual({ UpdateItem: 1, GetItem: 1 });
    expect((await entryOf(name))?.revision).toBe(1);
    expect(await store.getConnection(`${name}-old`)).toBeUndefined();
  });

  it('refuses a connect older than the recorded disconnect', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    await store.disconnect({ connectionId: `${name}-a`, at: T0 + 100 });

    expect(await store.connect(connectChange(name, `${name}-b`, T0 + 50))).toBe('stale');
    expect((await entryOf(name))?.connection?.disconnectedAt).toBe(T0 + 100);
  });

  it('never overwrites a hand-made entry', async () => {
    const name = vm();
    const handMade: WorkloadEntry = { ...template(name), spec: { address: '192.168.0.9' } };
    await store.applyEntry(handMade);

    expect(await store.connect(connectChange(name, `${name}-a`, T0))).toBe('conflict');

    const record = await entryOf(name);
    expect(record?.autoRegistrationGroup).toBeUndefined();
    expect(record?.entry.spec).toEqual({ address: '192.168.0.9' });
    expect(await store.getConnection(`${name}-a`)).toBeUndefined();
  });

  it('sends one conditional upsert and one connection record put', async () => {
    const name = vm();
    requests.reset();
    await store.connect(connectChange(name, 'pin-connect', T0));

    expect(requests.counts()).toEqual({ UpdateItem: 1, PutItem: 1 });
    expect(requests.itemsRead()).toBe(0);
    const [update, put] = requests.requests();
    expect(update?.input).toEqual({
      TableName: dynamo.tableName,
      Key: { pk: `NS#${NS}`, sk: `WE#${name}` },
      UpdateExpression:
        'SET #entry = if_not_exists(#entry, :entry), ' +
        'autoRegistrationGroup = if_not_exists(autoRegistrationGroup, :group), ' +
        'healthChecksEnabled = if_not_exists(healthChecksEnabled, :healthChecksEnabled), ' +
        'groupGeneration = if_not_exists(groupGeneration, :groupGeneration), ' +
        '#identity = :identity, controller = :controller, connectedAt = :at, ' +
        'newestConnectionId = :connection, sweepState = :sweepState, sweepAt = :at ' +
        'REMOVE disconnectedAt ADD conns :connections, revision :one',
      ConditionExpression:
        'attribute_not_exists(pk) OR (attribute_exists(autoRegistrationGroup) ' +
        'AND (attribute_not_exists(connectedAt) OR connectedAt < :at) ' +
        'AND (attribute_not_exists(disconnectedAt) OR disconnectedAt < :at))',
      ExpressionAttributeNames: { '#entry': 'entry', '#identity': 'identity' },
      ExpressionAttributeValues: {
        ':entry': template(name),
        ':group': 'web',
        ':healthChecksEnabled': true,
        ':groupGeneration': 1,
        ':identity': { principal: 'token:t1', namespace: NS },
        ':controller': 'workload-registrar',
        ':at': T0,
        ':connection': 'pin-connect',
        ':sweepState': `C#${sweepShard({ namespace: NS, name })}`,
        ':connections': new Set(['pin-connect']),
        ':one': 1,
      },
      ReturnValues: 'UPDATED_OLD',
    });
    expect(put?.input).toEqual({
      TableName: dynamo.tableName,
      Item: { pk: 'CONN#pin-connect', sk: 'CONN', namespace: NS, name, connectedAt: T0 },
    });
  });
});

describe('disconnect', () => {
  it('marks the entry disconnected, keeps the controller and moves it to the disconnected sweep shard', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));

    expect(await store.disconnect({ connectionId: `${name}-a`, at: T0 + 60_000 })).toEqual({
      outcome: 'disconnected',
      entry: { namespace: NS, name },
    });

    expect((await entryOf(name))?.connection).toEqual({
      controller: 'workload-registrar',
      disconnectedAt: T0 + 60_000,
      connectionIds: [],
      newestConnectionId: `${name}-a`,
    });
    const item = await rawItem(name);
    expect(item?.sweepState).toBe(`D#${sweepShard({ namespace: NS, name })}`);
    expect(item?.sweepAt).toBe(T0 + 60_000);
    expect(await store.getConnection(`${name}-a`)).toBeUndefined();
  });

  it('keeps the entry connected while a newer connection holds it (make before break)', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-old`, T0));
    await store.connect(connectChange(name, `${name}-new`, T0 + 1000));

    const result = await store.disconnect({ connectionId: `${name}-old`, at: T0 + 2000 });

    expect(result.outcome).toBe('still-held');
    expect((await entryOf(name))?.connection).toEqual({
      controller: 'workload-registrar',
      connectedAt: T0 + 1000,
      connectionIds: [`${name}-new`],
      newestConnectionId: `${name}-new`,
    });
  });

  it('ignores a late disconnect from a replaced connection', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-old`, T0));
    await store.connect(connectChange(name, `${name}-new`, T0 + 1000));
    const before = await entryOf(name);

    await store.disconnect({ connectionId: `${name}-old`, at: T0 + 7_200_000 });

    const after = await entryOf(name);
    expect(after?.connection?.connectedAt).toBe(before?.connection?.connectedAt);
    expect(after?.connection?.disconnectedAt).toBeUndefined();
    expect(after?.connection?.newestConnectionId).toBe(`${name}-new`);
    expect(await store.disconnect({ connectionId: `${name}-old`, at: T0 + 7_200_001 })).toEqual({
      outcome: 'unknown-connection',
    });
  });

  it('writes nothing for a connection that registered nothing', async () => {
    requests.reset();

    expect(await store.disconnect({ connectionId: 'never-connected', at: T0 })).toEqual({
      outcome: 'unknown-connection',
    });
    expect(requests.counts()).toEqual({ GetItem: 1 });
  });

  it('leaves the entry disconnected when its two connections close at once', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    await store.connect(connectChange(name, `${name}-b`, T0 + 1));

    const outcomes = await Promise.all([
      store.disconnect({ connectionId: `${name}-a`, at: T0 + 10 }),
      store.disconnect({ connectionId: `${name}-b`, at: T0 + 10 }),
    ]);

    expect(outcomes.map((result) => result.outcome).sort()).toEqual(['disconnected', 'still-held']);
    const connection = (await entryOf(name))?.connection;
    expect(connection?.connectedAt).toBeUndefined();
    expect(connection?.disconnectedAt).toBe(T0 + 10);
    expect(connection?.connectionIds).toEqual([]);
  });

  it('reads the connection record, then sends one conditional update and one delete', async () => {
    const name = vm();
    await store.connect(connectChange(name, 'pin-disconnect', T0));
    requests.reset();

    await store.disconnect({ connectionId: 'pin-disconnect', at: T0 + 5 });

    expect(requests.counts()).toEqual({ GetItem: 1, UpdateItem: 1, DeleteItem: 1 });
    expect(requests.itemsRead()).toBe(1);
    expect(requests.requests().map((request) => request.input)).toEqual([
      {
        TableName: dynamo.tableName,
        Key: { pk: 'CONN#pin-disconnect', sk: 'CONN' },
        ConsistentRead: true,
      },
      {
        TableName: dynamo.tableName,
        Key: { pk: `NS#${NS}`, sk: `WE#${name}` },
        UpdateExpression:
          'SET disconnectedAt = :at, sweepState = :sweepState, sweepAt = :at ' +
          'REMOVE connectedAt DELETE conns :connections ADD revision :one',
        ConditionExpression: 'size(conns) = :one AND contains(conns, :connection)',
        ExpressionAttributeValues: {
          ':at': T0 + 5,
          ':sweepState': `D#${sweepShard({ namespace: NS, name })}`,
          ':connections': new Set(['pin-disconnect']),
          ':connection': 'pin-disconnect',
          ':one': 1,
        },
      },
      { TableName: dynamo.tableName, Key: { pk: 'CONN#pin-disconnect', sk: 'CONN' } },
    ]);
  });

  it('sends a second update that only forgets the connection when another holds the entry', async () => {
    const name = vm();
    await store.connect(connectChange(name, 'pin-held-old', T0));
    await store.connect(connectChange(name, 'pin-held-new', T0 + 1));
    requests.reset();

    await store.disconnect({ connectionId: 'pin-held-old', at: T0 + 5 });

    expect(requests.counts()).toEqual({ GetItem: 1, UpdateItem: 2, DeleteItem: 1 });
    expect(requests.requests()[2]?.input).toEqual({
      TableName: dynamo.tableName,
      Key: { pk: `NS#${NS}`, sk: `WE#${name}` },
      UpdateExpression: 'DELETE conns :connections ADD revision :one',
      ConditionExpression: 'size(conns) > :one AND contains(conns, :connection)',
      ExpressionAttributeValues: {
        ':connections': new Set(['pin-held-old']),
        ':connection': 'pin-held-old',
        ':one': 1,
      },
    });
  });

  it('keeps a rotation disconnect at one write when the agent says the connection was replaced', async () => {
    const name = vm();
    await store.connect(connectChange(name, 'pin-rotated-old', T0));
    await store.connect(connectChange(name, 'pin-rotated-new', T0 + 1));
    requests.reset();

    const result = await store.disconnect({
      connectionId: 'pin-rotated-old',
      at: T0 + 5,
      replaced: true,
    });

    expect(result.outcome).toBe('still-held');
    expect(requests.counts()).toEqual({ GetItem: 1, UpdateItem: 1, DeleteItem: 1 });
  });

  it('still marks the entry disconnected when a replaced hint is wrong', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-only`, T0));

    const result = await store.disconnect({
      connectionId: `${name}-only`,
      at: T0 + 5,
      replaced: true,
    });

    expect(result.outcome).toBe('disconnected');
    expect((await entryOf(name))?.connection?.disconnectedAt).toBe(T0 + 5);
  });
});

describe('health', () => {
  async function connected(): Promise<string> {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    return name;
  }

  it('sets the Healthy condition with the transition time of the first report', async () => {
    const name = await connected();

    const result = await store.reportHealth({
      connectionId: `${name}-a`,
      healthy: true,
      at: T0 + 10,
    });

    expect(result).toEqual({
      outcome: 'transitioned',
      entry: { namespace: NS, name },
      healthy: true,
    });
    expect((await entryOf(name))?.health).toEqual({
      status: 'True',
      lastProbeTime: T0 + 10,
      lastTransitionTime: T0 + 10,
    });
  });

  it('refreshes the probe time but keeps the transition time while the status stays', async () => {
    const name = await connected();
    await store.reportHealth({ connectionId: `${name}-a`, healthy: true, at: T0 + 10 });

    const result = await store.reportHealth({
      connectionId: `${name}-a`,
      healthy: true,
      at: T0 + 20,
    });

    expect(result.outcome).toBe('refreshed');
    expect((await entryOf(name))?.health).toEqual({
      status: 'True',
      lastProbeTime: T0 + 20,
      lastTransitionTime: T0 + 10,
    });
  });

  it('moves the transition time when the status changes, with a message only while unhealthy', async () => {
    const name = await connected();
    const connectionId = `${name}-a`;
    await store.reportHealth({ connectionId, healthy: true, at: T0 + 10 });

    expect(
      (
        await store.reportHealth({
          connectionId,
          healthy: false,
          message: 'probe failed',
          at: T0 + 20,
        })
      ).outcome,
    ).toBe('transitioned');
    expect((await entryOf(name))?.health).toEqual({
      status: 'False',
      message: 'probe failed',
      lastProbeTime: T0 + 20,
      lastTransitionTime: T0 + 20,
    });

    await store.reportHealth({
      connectionId,
      healthy: true,
      message: 'ignored when healthy',
      at: T0 + 30,
    });
    expect((await entryOf(name))?.health).toEqual({
      status: 'True',
      lastProbeTime: T0 + 30,
      lastTransitionTime: T0 + 30,
    });
  });

  it('ignores a report from a connection that is not the newest', async () => {
    const name = await connected();
    await store.connect(connectChange(name, `${name}-b`, T0 + 5));
    await store.reportHealth({ connectionId: `${name}-b`, healthy: true, at: T0 + 10 });

    const result = await store.reportHealth({
      connectionId: `${name}-a`,
      healthy: false,
      at: T0 + 20,
    });

    expect(result).toEqual({ outcome: 'ignored', entry: { namespace: NS, name } });
    expect((await entryOf(name))?.health?.status).toBe('True');
  });

  it('ignores a report older than the stored probe time', async () => {
    const name = await connected();
    await store.reportHealth({ connectionId: `${name}-a`, healthy: true, at: T0 + 20 });

    const result = await store.reportHealth({
      connectionId: `${name}-a`,
      healthy: false,
      at: T0 + 10,
    });

    expect(result.outcome).toBe('ignored');
    expect((await entryOf(name))?.health?.lastProbeTime).toBe(T0 + 20);
  });

  it('keeps the other conditions and their order', async () => {
    const name = await connected();

    await store.reportHealth({ connectionId: `${name}-a`, healthy: true, at: T0 + 10 });

    const record = await entryOf(name);
    expect(record && renderWorkloadEntry(record).status?.conditions?.map((c) => c.type)).toEqual([
      'Ready',
      'Healthy',
    ]);
  });

  it('writes nothing for a connection that registered nothing', async () => {
    requests.reset();

    expect(await store.reportHealth({ connectionId: 'nobody', healthy: true, at: T0 })).toEqual({
      outcome: 'unknown-connection',
    });
    expect(requests.counts()).toEqual({ GetItem: 1 });
  });

  it('reads the connection record and sends one conditional update', async () => {
    const name = vm();
    await store.connect(connectChange(name, 'pin-health', T0));
    requests.reset();

    await store.reportHealth({
      connectionId: 'pin-health',
      healthy: false,
      message: 'down',
      at: T0 + 1,
    });

    expect(requests.counts()).toEqual({ GetItem: 1, UpdateItem: 1 });
    expect(requests.requests()[1]?.input).toEqual({
      TableName: dynamo.tableName,
      Key: { pk: `NS#${NS}`, sk: `WE#${name}` },
      UpdateExpression:
        'SET healthStatus = :status, lastProbeTime = :at, ' +
        'healthyFalseSince = if_not_exists(healthyFalseSince, :at), healthMessage = :message ' +
        'REMOVE healthyTrueSince ADD revision :one',
      ConditionExpression:
        'newestConnectionId = :connection AND (attribute_not_exists(lastProbeTime) OR lastProbeTime < :at)',
      ExpressionAttributeValues: {
        ':status': 'False',
        ':at': T0 + 1,
        ':connection': 'pin-health',
        ':one': 1,
        ':message': 'down',
      },
      ReturnValues: 'UPDATED_OLD',
    });
  });
});

describe('sweep index', () => {
  // A table of its own: the candidate queries read across the whole index.
  let own: TestDynamo;
  let sweepStore: DynamoDbRegistryStore;
  let counter: RequestCounter;
  beforeAll(async () => {
    own = await startTestDynamo();
    sweepStore = new DynamoDbRegistryStore(own.client, own.tableName);
    counter = countRequests(own.client);
  });
  afterAll(async () => {
    await own?.close();
  });

  async function collect(
    cutoffs: { disconnectedAtOrBefore: number; connectedBefore: number },
    limit = 100,
  ) {
    const names: string[] = [];
    for await (const record of sweepStore.sweepCandidates(cutoffs, limit)) {
      names.push(record.entry.metadata.name);
    }
    return names.sort();
  }

  it('finds disconnected entries at the cutoff and connected ones strictly before it, with Query only', async () => {
    await sweepStore.connect(connectChange('gone-at-cutoff', 'g1', T0));
    await sweepStore.disconnect({ connectionId: 'g1', at: T0 + 100 });
    await sweepStore.connect(connectChange('gone-after-cutoff', 'g2', T0));
    await sweepStore.disconnect({ connectionId: 'g2', at: T0 + 101 });
    await sweepStore.connect(connectChange('connected-before', 'g3', T0 + 99));
    await sweepStore.connect(connectChange('connected-at-cutoff', 'g4', T0 + 100));
    await sweepStore.applyEntry({ ...template('hand-made'), spec: { address: '10.1.1.1' } });
    counter.reset();

    const names = await collect({ disconnectedAtOrBefore: T0 + 100, connectedBefore: T0 + 100 });

    expect(names).toEqual(['connected-before', 'gone-at-cutoff']);
    // 2 states x 4 shards, every one a Query on the index; the 3 other entries are not read.
    expect(counter.counts()).toEqual({ Query: 8 });
    expect(counter.itemsRead()).toBe(2);
    expect(counter.requests().every((request) => request.input.IndexName === 'sweep')).toBe(true);
  });

  it('stops reading at the limit', async () => {
    counter.reset();

    const names = await collect(
      { disconnectedAtOrBefore: T0 + 1000, connectedBefore: T0 + 1000 },
      1,
    );

    expect(names).toHaveLength(1);
    expect(counter.itemsRead()).toBe(1);
  });

  it('loses a conditional delete to a reconnect that landed after the read', async () => {
    await sweepStore.connect(connectChange('comes-back', 'r1', T0));
    await sweepStore.disconnect({ connectionId: 'r1', at: T0 + 10 });
    let read: EntryRecord | undefined;
    for await (const record of sweepStore.sweepCandidates(
      { disconnectedAtOrBefore: T0 + 10, connectedBefore: 0 },
      100,
    )) {
      if (record.entry.metadata.name === 'comes-back') read = record;
    }
    await sweepStore.connect(connectChange('comes-back', 'r2', T0 + 20));

    expect(read && (await sweepStore.deleteSwept(read))).toBe('conflict');
    expect(
      (await sweepStore.getEntry({ namespace: NS, name: 'comes-back' }))?.connection?.connectedAt,
    ).toBe(T0 + 20);
  });

  it('deletes a stale entry at the revision read, with the records of its lost connections', async () => {
    await sweepStore.connect(connectChange('lost-disconnect', 's1', T0 - 5));
    const record = await sweepStore.getEntry({ namespace: NS, name: 'lost-disconnect' });
    counter.reset();

    expect(record && (await sweepStore.deleteSwept(record))).toBe('deleted');

    expect(counter.requests()[0]?.input).toEqual({
      TableName: own.tableName,
      Key: { pk: `NS#${NS}`, sk: 'WE#lost-disconnect' },
      ConditionExpression: 'revision = :revision',
      ExpressionAttributeValues: { ':revision': 1 },
    });
    expect(await sweepStore.getEntry({ namespace: NS, name: 'lost-disconnect' })).toBeUndefined();
    expect(await sweepStore.getConnection('s1')).toBeUndefined();
  });
});
