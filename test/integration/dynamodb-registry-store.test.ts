import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { entryOrigin } from '../../lib/domain/entry-name.ts';
import { type EntryRecord, renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
import { ISTIO_API_VERSION, type WorkloadEntry } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { entryKey, sweepShard, sweepState } from '../../lib/store/item-codec.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import { SWEEP_SHARDS, zoneShardOf } from '../../lib/store/table-definition.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

const NS = 'shop';
const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);

let dynamo: TestDynamo;
let store: RegistrarStore;
let requests: RequestCounter;
let vmCount = 0;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
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
    origin: entryOrigin('web', '10.0.0.1'),
    healthChecksEnabled: true,
    groupGeneration: 1,
    connectionId,
    connectedAt,
    controller: 'workload-registrar',
    identity: { principal: 'token:t1', namespace: NS, serviceAccount: 'web' },
    mayCreate: true,
    recordConnection: false,
  };
}

function ref(name: string) {
  return { namespace: NS, name };
}

function leave(name: string, connectionId: string, at: number, replaced?: boolean) {
  return store.leave({ connectionId, entry: ref(name), at, ...(replaced ? { replaced } : {}) });
}

function health(
  name: string,
  connectionId: string,
  healthy: boolean,
  at: number,
  message?: string,
) {
  return store.reportHealth({
    connectionId,
    entry: ref(name),
    healthy,
    at,
    ...(message === undefined ? {} : { message }),
  });
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
  it('creates the entry from the template on the first connect, held by the connection', async () => {
    const name = vm();
    expect(await store.connect(connectChange(name, 'c1', T0))).toBe('created');
    const record = await entryOf(name);
    expect(record).toEqual({
      entry: template(name),
      autoRegistrationGroup: 'web',
      healthChecksEnabled: true,
      groupGeneration: 1,
      identity: { principal: 'token:t1', namespace: NS, serviceAccount: 'web' },
      connection: {
        controller: 'workload-registrar',
        connectedAt: T0,
        connectionIds: ['c1'],
        holderSince: { c1: T0 },
        newestConnectionId: 'c1',
      },
      revision: 1,
      // Its history starts now: Registered is derived from its creation, never stored.
      eventsSince: T0,
    });
    // Token mode: the connection carries its entry; no record is written.
    expect(await store.getConnection('c1')).toBeUndefined();
  });

  it('writes the connection record first when the connection cannot carry its entry (IAM mode)', async () => {
    const name = vm();
    requests.reset();
    await store.connect({ ...connectChange(name, `${name}-iam`, T0), recordConnection: true });

    // The record, the entry, then the zone's counter (the entry became connected).
    expect(requests.requests().map((r) => r.command)).toEqual([
      'PutItem',
      'UpdateItem',
      'UpdateItem',
    ]);
    expect(await store.getConnection(`${name}-iam`)).toEqual({
      connectionId: `${name}-iam`,
      entry: ref(name),
      connectedAt: T0,
    });
  });

  it('changes only the connection state on a reconnect, never spec, labels or status', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    await leave(name, `${name}-a`, T0 + 10);
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
      holderSince: { [`${name}-b`]: T0 + 20 },
      newestConnectionId: `${name}-b`,
    });
  });

  it('makes a connect processed after a newer one a holder too, keeping the newer connect time', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-new`, T0 + 100));

    expect(await store.connect(connectChange(name, `${name}-old`, T0 + 50))).toBe('joined');

    const connection = (await entryOf(name))?.connection;
    expect(connection?.connectionIds).toEqual([`${name}-new`, `${name}-old`]);
    expect(connection?.connectedAt).toBe(T0 + 100);
    expect(connection?.newestConnectionId).toBe(`${name}-new`);
    expect((await rawItem(name))?.sweepAt).toBe(T0 + 100);
  });

  it('makes a connect hold the entry after a later disconnect of another connection was processed', async () => {
    // An old socket ends while the new one is in its $connect: the old $disconnect is
    // processed first, with a later time than the new connect's.
    const name = vm();
    await store.connect(connectChange(name, `${name}-old`, T0));
    await leave(name, `${name}-old`, T0 + 100);

    expect(await store.connect(connectChange(name, `${name}-new`, T0 + 50))).toBe('reconnected');

    const connection = (await entryOf(name))?.connection;
    expect(connection?.connectionIds).toEqual([`${name}-new`]);
    expect(connection?.connectedAt).toBe(T0 + 50);
    expect(connection?.disconnectedAt).toBeUndefined();
  });

  it('makes every one of ten connects in one millisecond a holder', async () => {
    const name = vm();
    const ids = Array.from({ length: 10 }, (_, i) => `${name}-same-ms-${i}`);

    const outcomes = await Promise.all(ids.map((id) => store.connect(connectChange(name, id, T0))));

    expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
    expect(outcomes.every((o) => o === 'created' || o === 'reconnected')).toBe(true);
    expect((await entryOf(name))?.connection?.connectionIds).toEqual([...ids].sort());
  });

  it('lands on the same state when the SDK resends an applied connect after a lost response', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    await store.connect(connectChange(name, `${name}-a`, T0));

    const connection = (await entryOf(name))?.connection;
    expect(connection?.connectionIds).toEqual([`${name}-a`]);
    expect(connection?.connectedAt).toBe(T0);
  });

  it('never overwrites a hand-made entry', async () => {
    const name = vm();
    const handMade: WorkloadEntry = { ...template(name), spec: { address: '192.168.0.9' } };
    await store.applyEntry(handMade);

    expect(await store.connect(connectChange(name, `${name}-a`, T0))).toBe('conflict');

    const record = await entryOf(name);
    expect(record?.autoRegistrationGroup).toBeUndefined();
    expect(record?.entry.spec).toEqual({ address: '192.168.0.9' });
    expect(record?.connection).toBeUndefined();
  });

  it('refuses a connect whose (group, address, network) only spells the same name', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-api`, T0));
    const other = connectChange(name, `${name}-other`, T0 + 10);
    other.origin = entryOrigin('web-10.0.0.1', '10.0.0.2');

    expect(await store.connect(other)).toBe('collision');
    expect((await entryOf(name))?.connection?.connectionIds).toEqual([`${name}-api`]);
  });

  it('refuses a caller that may not control the existing entry (its service account)', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    const namespaceWide = connectChange(name, `${name}-b`, T0 + 10);
    namespaceWide.identity = { principal: 'token:t2', namespace: NS };
    const otherAccount = connectChange(name, `${name}-c`, T0 + 20);
    otherAccount.identity = { principal: 'token:t3', namespace: NS, serviceAccount: 'api' };

    expect(await store.connect(namespaceWide)).toBe('forbidden');
    expect(await store.connect(otherAccount)).toBe('forbidden');

    const record = await entryOf(name);
    expect(record?.connection?.connectionIds).toEqual([`${name}-a`]);
    expect(record?.identity?.principal).toBe('token:t1');
  });

  it('lets a caller the template refuses join an entry it may control, and writes nothing otherwise', async () => {
    const name = vm();
    const refusedByTemplate = { ...connectChange(name, `${name}-a`, T0), mayCreate: false };
    requests.reset();

    expect(await store.connect(refusedByTemplate)).toBe('forbidden');
    expect(requests.counts()).toEqual({ GetItem: 1 });

    await store.connect(connectChange(name, `${name}-b`, T0 + 10));
    expect(await store.connect({ ...refusedByTemplate, connectedAt: T0 + 20 })).toBe('reconnected');
  });

  it('refuses the connect of a connection whose $disconnect was processed first', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));

    expect(await leave(name, `${name}-late`, T0 + 5)).toEqual({ outcome: 'not-holder' });
    expect(await store.connect(connectChange(name, `${name}-late`, T0 + 1))).toBe('departed');

    expect((await entryOf(name))?.connection?.connectionIds).toEqual([`${name}-a`]);
  });

  it('sends one conditional update for a connect, and one to its zone counter when it becomes connected', async () => {
    const name = vm();
    requests.reset();
    await store.connect(connectChange(name, 'pin-connect', T0));

    expect(requests.counts()).toEqual({ UpdateItem: 2 });
    expect(requests.itemsRead()).toBe(0);
    expect(requests.requests()[0]?.input).toEqual({
      TableName: dynamo.tableName,
      Key: { pk: `NS#${NS}`, sk: `WE#${name}` },
      UpdateExpression:
        'SET #entry = if_not_exists(#entry, :entry), ' +
        'autoRegistrationGroup = if_not_exists(autoRegistrationGroup, :group), ' +
        'origin = if_not_exists(origin, :origin), ' +
        'healthChecksEnabled = if_not_exists(healthChecksEnabled, :healthChecksEnabled), ' +
        'groupGeneration = if_not_exists(groupGeneration, :groupGeneration), ' +
        '#identity = :identity, controller = :controller, connectedAt = :at, ' +
        'newestConnectionId = :connection, sweepState = :sweepState, sweepAt = :at, #held = :at, ' +
        '#by = :principal, ' +
        'eventsSince = if_not_exists(eventsSince, :at) ' +
        'REMOVE disconnectedAt, departure, drainingSince, instanceId ADD conns :connections, revision :one',
      ConditionExpression:
        'attribute_not_exists(pk) OR (attribute_exists(autoRegistrationGroup) ' +
        'AND (attribute_not_exists(origin) OR origin = :origin) ' +
        'AND (attribute_not_exists(#entry.#spec.#sa) OR #entry.#spec.#sa = :noAccount ' +
        'OR #entry.#spec.#sa = :account) ' +
        'AND NOT contains(departed, :connection) ' +
        'AND (attribute_not_exists(connectedAt) OR connectedAt <= :at))',
      ExpressionAttributeNames: {
        '#entry': 'entry',
        '#spec': 'spec',
        '#sa': 'serviceAccount',
        '#identity': 'identity',
        '#held': 'held:pin-connect',
        '#by': 'by:pin-connect',
      },
      ExpressionAttributeValues: {
        ':origin': entryOrigin('web', '10.0.0.1'),
        ':connection': 'pin-connect',
        ':noAccount': '',
        ':account': 'web',
        ':entry': template(name),
        ':group': 'web',
        ':healthChecksEnabled': true,
        ':groupGeneration': 1,
        ':identity': { principal: 'token:t1', namespace: NS, serviceAccount: 'web' },
        ':principal': 'token:t1',
        ':controller': 'workload-registrar',
        ':at': T0,
        ':sweepState': `C#${sweepShard(ref(name))}`,
        ':connections': new Set(['pin-connect']),
        ':one': 1,
      },
      ReturnValues: 'ALL_OLD',
    });
    expect(requests.requests()[1]?.input).toEqual({
      TableName: dynamo.tableName,
      // The entry's counter shard: one key of ZONE_SHARDS, the same for every write of it.
      Key: { pk: `ZONE#${zoneShardOf(ref(name))}`, sk: `${ref(name).namespace}#-` },
      UpdateExpression: 'ADD #connected :connected SET lastOp = :op',
      // The transition counted: a resend of this update after a lost response counts nothing.
      ConditionExpression: 'attribute_not_exists(lastOp) OR lastOp <> :op',
      ExpressionAttributeNames: { '#connected': 'connected' },
      ExpressionAttributeValues: { ':connected': 1, ':op': expect.stringMatching(/@new:connect:/) },
    });
  });
});

describe('leave', () => {
  it('marks the entry disconnected when its last holder leaves, and moves it to the disconnected shard', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));

    expect(await leave(name, `${name}-a`, T0 + 60_000)).toEqual({ outcome: 'disconnected' });

    expect((await entryOf(name))?.connection).toEqual({
      controller: 'workload-registrar',
      disconnectedAt: T0 + 60_000,
      // No close code given: the cautious reading.
      departure: 'abnormal',
      connectionIds: [],
      holderSince: {},
    });
    const item = await rawItem(name);
    // Its namespace's own key: the fair sweeper reads each namespace's departures apart.
    expect(item?.sweepState).toBe(`D#${NS}#${sweepShard(ref(name))}`);
    expect(item?.sweepAt).toBe(T0 + 60_000);
    expect(item?.[`held:${name}-a`]).toBeUndefined();
    expect(item?.[`by:${name}-a`]).toBeUndefined();
  });

  it('records a clean departure in the clean shard and an abnormal one in the disconnected shard', async () => {
    const clean = vm();
    const abnormal = `${clean}-b`;
    await store.connect(connectChange(clean, `${clean}-a`, T0));
    await store.connect(connectChange(abnormal, `${abnormal}-a`, T0));

    await store.leave({
      connectionId: `${clean}-a`,
      entry: ref(clean),
      at: T0 + 1,
      departure: 'clean',
    });
    await store.leave({
      connectionId: `${abnormal}-a`,
      entry: ref(abnormal),
      at: T0 + 1,
      departure: 'abnormal',
    });

    expect((await rawItem(clean))?.sweepState).toBe(`L#${NS}#${sweepShard(ref(clean))}`);
    expect((await entryOf(clean))?.connection?.departure).toBe('clean');
    expect((await rawItem(abnormal))?.sweepState).toBe(`D#${NS}#${sweepShard(ref(abnormal))}`);
    expect((await entryOf(abnormal))?.connection?.departure).toBe('abnormal');
  });

  it('keeps the entry connected while another connection holds it, and names the holders left', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-old`, T0));
    await store.connect(connectChange(name, `${name}-new`, T0 + 1000));

    expect(await leave(name, `${name}-old`, T0 + 2000)).toEqual({
      outcome: 'still-held',
      holders: [{ connectionId: `${name}-new`, since: T0 + 1000 }],
    });
    expect((await entryOf(name))?.connection).toMatchObject({
      connectedAt: T0 + 1000,
      connectionIds: [`${name}-new`],
    });
  });

  it('changes nothing for a repeated or late $disconnect', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-old`, T0));
    await store.connect(connectChange(name, `${name}-new`, T0 + 1000));
    await leave(name, `${name}-old`, T0 + 2000);
    const before = await entryOf(name);

    expect(await leave(name, `${name}-old`, T0 + 7_200_000)).toEqual({ outcome: 'not-holder' });

    const after = await entryOf(name);
    expect(after?.connection).toEqual(before?.connection);
    expect(after?.revision).toBe(before?.revision);
  });

  it('changes nothing for an entry that does not exist', async () => {
    expect(await leave('never-registered', 'nobody', T0)).toEqual({ outcome: 'not-holder' });
    expect(await entryOf('never-registered')).toBeUndefined();
  });

  it('leaves the entry disconnected when its two holders close at once', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    await store.connect(connectChange(name, `${name}-b`, T0 + 1));

    const outcomes = await Promise.all([
      leave(name, `${name}-a`, T0 + 10),
      leave(name, `${name}-b`, T0 + 10),
    ]);

    expect(outcomes.map((result) => result.outcome).sort()).toEqual(['disconnected', 'still-held']);
    const connection = (await entryOf(name))?.connection;
    expect(connection?.connectedAt).toBeUndefined();
    expect(connection?.disconnectedAt).toBe(T0 + 10);
    expect(connection?.connectionIds).toEqual([]);
  });

  it('sends one conditional update and reads nothing', async () => {
    const name = vm();
    await store.connect(connectChange(name, 'pin-leave', T0));
    requests.reset();

    await leave(name, 'pin-leave', T0 + 5);

    // The entry, then its zone's counters (one fewer connected, one more away).
    expect(requests.counts()).toEqual({ UpdateItem: 2 });
    expect(requests.itemsRead()).toBe(0);
    expect(requests.requests()[0]?.input).toEqual({
      TableName: dynamo.tableName,
      Key: { pk: `NS#${NS}`, sk: `WE#${name}` },
      // The Disconnected event rides on the same write: no request of its own.
      UpdateExpression:
        'SET #evList = list_append(if_not_exists(#evList, :evNone), :evNew), ' +
        'eventsSince = if_not_exists(eventsSince, :evAt), ' +
        'disconnectedAt = :at, departure = :departure, sweepState = :sweepState, sweepAt = :at ' +
        'REMOVE connectedAt, newestConnectionId, cleanExitSince, #h0, #b0, #t0 DELETE conns :connections ADD revision :one',
      ConditionExpression: 'size(conns) = :count AND contains(conns, :c0)',
      ExpressionAttributeNames: {
        '#h0': 'held:pin-leave',
        '#b0': 'by:pin-leave',
        // The heartbeat the holder was told goes with it (lib/domain/holder-heartbeat.ts).
        '#t0': 'beat:pin-leave',
        '#evList': 'events',
      },
      ExpressionAttributeValues: {
        ':at': T0 + 5,
        ':departure': 'abnormal',
        ':sweepState': `D#${NS}#${sweepShard(ref(name))}`,
        ':connections': new Set(['pin-leave']),
        ':count': 1,
        ':one': 1,
        ':c0': 'pin-leave',
        ':evNone': [],
        ':evNew': [
          {
            t: T0 + 5,
            r: 'Disconnected',
            m: 'the last connection pin-leave went away without a clean close (VM or network down); deleted after the grace period unless it reconnects',
            w: true,
          },
        ],
        ':evAt': T0 + 5,
      },
      ReturnValues: 'ALL_OLD',
    });
    expect(requests.requests()[1]?.input).toMatchObject({
      Key: { pk: `ZONE#${zoneShardOf(ref(name))}`, sk: `${ref(name).namespace}#-` },
      UpdateExpression: 'ADD #connected :connected, #away :away SET lastOp = :op',
      ExpressionAttributeValues: {
        ':connected': -1,
        ':away': 1,
        ':op': expect.stringMatching(/:leave$/),
      },
    });
  });

  it('keeps a rotation disconnect at one write when the agent says the connection was replaced', async () => {
    const name = vm();
    await store.connect(connectChange(name, 'pin-rotated-old', T0));
    await store.connect(connectChange(name, 'pin-rotated-new', T0 + 1));
    requests.reset();

    const result = await leave(name, 'pin-rotated-old', T0 + 5, true);

    expect(result.outcome).toBe('still-held');
    expect(requests.counts()).toEqual({ UpdateItem: 1 });
  });

  it('still marks the entry disconnected when a replaced hint is wrong', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-only`, T0));

    expect((await leave(name, `${name}-only`, T0 + 5, true)).outcome).toBe('disconnected');
    expect((await entryOf(name))?.connection?.disconnectedAt).toBe(T0 + 5);
  });
});

describe('dropping holders proved gone', () => {
  it('drops only the holders named, and marks the entry disconnected when none is left', async () => {
    const name = vm();
    await store.connect(connectChange(name, `${name}-a`, T0));
    await store.connect(connectChange(name, `${name}-b`, T0 + 1));
    await store.connect(connectChange(name, `${name}-c`, T0 + 2));

    expect(await store.dropHolders(ref(name), [`${name}-a`, `${name}-x`], T0 + 10)).toBe(
      'still-held',
    );
    expect((await entryOf(name))?.connection?.connectionIds).toEqual([`${name}-b`, `${name}-c`]);

    expect(await store.dropHolders(ref(name), [`${name}-b`, `${name}-c`], T0 + 20)).toBe(
      'disconnected',
    );
    expect((await entryOf(name))?.connection).toMatchObject({
      connectionIds: [],
      disconnectedAt: T0 + 20,
    });
    expect(await store.dropHolders(ref(name), [`${name}-b`], T0 + 30)).toBe('unchanged');
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

    expect(await health(name, `${name}-a`, true, T0 + 10)).toBe('transitioned');
    expect((await entryOf(name))?.health).toEqual({
      status: 'True',
      lastProbeTime: T0 + 10,
      lastTransitionTime: T0 + 10,
    });
  });

  it('refreshes the probe time but keeps the transition time while the status stays', async () => {
    const name = await connected();
    await health(name, `${name}-a`, true, T0 + 10);

    expect(await health(name, `${name}-a`, true, T0 + 20)).toBe('refreshed');
    expect((await entryOf(name))?.health).toEqual({
      status: 'True',
      lastProbeTime: T0 + 20,
      lastTransitionTime: T0 + 10,
    });
  });

  it('moves the transition time when the status changes, with a message only while unhealthy', async () => {
    const name = await connected();
    await health(name, `${name}-a`, true, T0 + 10);

    expect(await health(name, `${name}-a`, false, T0 + 20, 'probe failed')).toBe('transitioned');
    expect((await entryOf(name))?.health).toEqual({
      status: 'False',
      message: 'probe failed',
      lastProbeTime: T0 + 20,
      lastTransitionTime: T0 + 20,
    });

    await health(name, `${name}-a`, true, T0 + 30);
    expect((await entryOf(name))?.health).toEqual({
      status: 'True',
      lastProbeTime: T0 + 30,
      lastTransitionTime: T0 + 30,
    });
  });

  it('lands a report from any holder, the newest report winning', async () => {
    const name = await connected();
    await store.connect(connectChange(name, `${name}-b`, T0 + 5));
    await health(name, `${name}-b`, true, T0 + 10);

    expect(await health(name, `${name}-a`, false, T0 + 20)).toBe('transitioned');
    expect((await entryOf(name))?.health?.status).toBe('False');
  });

  it('calls a report older than the stored probe time superseded and keeps the newer one', async () => {
    const name = await connected();
    await health(name, `${name}-a`, true, T0 + 20);

    expect(await health(name, `${name}-a`, false, T0 + 10)).toBe('superseded');
    expect((await entryOf(name))?.health?.lastProbeTime).toBe(T0 + 20);
  });

  it('refuses a report from a connection that holds nothing', async () => {
    const name = await connected();
    await store.connect(connectChange(name, `${name}-b`, T0 + 5));
    await leave(name, `${name}-a`, T0 + 6);

    expect(await health(name, `${name}-a`, false, T0 + 20)).toBe('not-holder');
    expect(await health('no-such-entry', 'nobody', true, T0)).toBe('not-holder');
    expect((await entryOf(name))?.health).toBeUndefined();
  });

  it('keeps the other conditions and their order', async () => {
    const name = await connected();

    await health(name, `${name}-a`, true, T0 + 10);

    const record = await entryOf(name);
    expect(record && renderWorkloadEntry(record).status?.conditions?.map((c) => c.type)).toEqual([
      'Ready',
      'Healthy',
    ]);
  });

  it('sends one conditional update for a report that keeps the status, and reads nothing', async () => {
    const name = vm();
    await store.connect(connectChange(name, 'pin-refresh', T0));
    await health(name, 'pin-refresh', true, T0 + 1);
    requests.reset();

    expect(await health(name, 'pin-refresh', true, T0 + 2)).toBe('refreshed');

    expect(requests.counts()).toEqual({ UpdateItem: 1 });
    expect(requests.itemsRead()).toBe(0);
    expect(requests.requests()[0]?.input).toEqual({
      TableName: dynamo.tableName,
      Key: { pk: `NS#${NS}`, sk: `WE#${name}` },
      UpdateExpression:
        'SET healthStatus = :status, lastProbeTime = :at, ' +
        'healthyTrueSince = if_not_exists(healthyTrueSince, :at) ' +
        'REMOVE healthyFalseSince, healthMessage ADD revision :one',
      ConditionExpression:
        'contains(conns, :connection) AND (attribute_not_exists(lastProbeTime) OR lastProbeTime < :at)' +
        ' AND attribute_not_exists(drainingSince) AND healthStatus = :status',
      ExpressionAttributeValues: {
        ':status': 'True',
        ':at': T0 + 2,
        ':connection': 'pin-refresh',
        ':one': 1,
      },
    });
  });

  it('records a transition with its event: the refresh write fails, the transition write lands', async () => {
    const name = vm();
    await store.connect(connectChange(name, 'pin-health', T0));
    requests.reset();

    await health(name, 'pin-health', false, T0 + 1, 'down');

    expect(requests.counts()).toEqual({ UpdateItem: 2 });
    expect(requests.itemsRead()).toBe(0);
    expect(requests.requests()[1]?.input).toEqual({
      TableName: dynamo.tableName,
      Key: { pk: `NS#${NS}`, sk: `WE#${name}` },
      UpdateExpression:
        'SET #evList = list_append(if_not_exists(#evList, :evNone), :evNew), ' +
        'eventsSince = if_not_exists(eventsSince, :evAt), ' +
        'healthStatus = :status, lastProbeTime = :at, ' +
        'healthyFalseSince = if_not_exists(healthyFalseSince, :at), healthMessage = :message ' +
        'REMOVE healthyTrueSince ADD revision :one',
      ConditionExpression:
        'contains(conns, :connection) AND (attribute_not_exists(lastProbeTime) OR lastProbeTime < :at)' +
        ' AND attribute_not_exists(drainingSince)' +
        ' AND (attribute_not_exists(healthStatus) OR healthStatus <> :status)',
      ExpressionAttributeNames: { '#evList': 'events' },
      ExpressionAttributeValues: {
        ':status': 'False',
        ':at': T0 + 1,
        ':connection': 'pin-health',
        ':one': 1,
        ':message': 'down',
        ':evNone': [],
        ':evNew': [{ t: T0 + 1, r: 'Unhealthy', m: 'Healthy turned False: down', w: true }],
        ':evAt': T0 + 1,
      },
      ReturnValues: 'UPDATED_OLD',
    });
  });
});

describe('sweep index', () => {
  // A table of its own: the candidate queries read across the whole index.
  let own: TestDynamo;
  let sweepStore: RegistrarStore;
  let counter: RequestCounter;
  beforeAll(async () => {
    own = await startTestDynamo();
    sweepStore = composeRegistry(own.client, own.tableName);
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

  async function departures(namespace: string, kind: 'D' | 'L', cutoff: number) {
    const names: string[] = [];
    for await (const record of sweepStore.departuresOf(namespace, kind, cutoff)) {
      names.push(record.entry.metadata.name);
    }
    return names;
  }

  function leaveOwn(name: string, connectionId: string, at: number) {
    return sweepStore.leave({ connectionId, entry: ref(name), at });
  }

  it('finds disconnected entries at the cutoff in their namespace, and connected ones strictly before it, with Query only', async () => {
    await sweepStore.connect(connectChange('gone-at-cutoff', 'g1', T0));
    await leaveOwn('gone-at-cutoff', 'g1', T0 + 100);
    await sweepStore.connect(connectChange('gone-after-cutoff', 'g2', T0));
    await leaveOwn('gone-after-cutoff', 'g2', T0 + 101);
    await sweepStore.connect(connectChange('connected-before', 'g3', T0 + 99));
    await sweepStore.connect(connectChange('connected-at-cutoff', 'g4', T0 + 100));
    await sweepStore.applyEntry({ ...template('hand-made'), spec: { address: '10.1.1.1' } });
    counter.reset();

    const shared = await collect({ disconnectedAtOrBefore: T0 + 100, connectedBefore: T0 + 100 });
    const departed = await departures(NS, 'D', T0 + 100);

    // The keys every namespace shares hold the stale entry; the namespace's own departures
    // key holds the one gone at the cutoff.
    expect(shared).toEqual(['connected-before']);
    expect(departed).toEqual(['gone-at-cutoff']);
    // 3 shared states (0.1.0's clean and abnormal departures, connected) x 4 shards, and the
    // namespace's 4 shards, every one a Query on the index; the 3 other entries are not read.
    expect(counter.counts()).toEqual({ Query: 12 + 4 });
    expect(counter.itemsRead()).toBe(2);
    expect(counter.requests().every((request) => request.input.IndexName === 'sweep')).toBe(true);
  });

  it("reads one namespace's departures only: another namespace's older backlog is not read", async () => {
    const other = { namespace: 'backlog' };
    for (let i = 0; i < 5; i++) {
      const name = `old-${i}`;
      await sweepStore.connect({
        ...connectChange(name, `b${i}`, T0 - 50_000),
        entry: { ...template(name), metadata: { name, namespace: other.namespace } },
      });
      await sweepStore.leave({
        connectionId: `b${i}`,
        entry: { namespace: other.namespace, name },
        at: T0 - 40_000,
        departure: 'clean',
      });
    }
    await sweepStore.connect(connectChange('left-cleanly', 'lc', T0));
    await sweepStore.leave({
      connectionId: 'lc',
      entry: ref('left-cleanly'),
      at: T0 + 1,
      departure: 'clean',
    });
    counter.reset();

    expect(await departures(NS, 'L', T0 + 1)).toEqual(['left-cleanly']);
    expect(counter.itemsRead()).toBe(1);
    expect(await departures(other.namespace, 'L', T0 + 1)).toHaveLength(5);
    expect(await departures(other.namespace, 'D', T0 + 1)).toEqual([]);
  });

  it('finds departures that release 0.1.0 keyed in the shared L#/D# keys', async () => {
    // As 0.1.0 wrote them: the item of a departed entry with `L#<shard>` / `D#<shard>`.
    for (const [name, kind] of [
      ['old-clean', 'L'],
      ['old-abnormal', 'D'],
    ] as const) {
      await sweepStore.connect(connectChange(name, `${name}-c`, T0 - 10_000));
      await own.client.send(
        new UpdateCommand({
          TableName: own.tableName,
          Key: entryKey(ref(name)),
          UpdateExpression:
            'SET disconnectedAt = :at, departure = :departure, sweepState = :state, sweepAt = :at REMOVE connectedAt, conns',
          ExpressionAttributeValues: {
            ':at': T0 - 5_000,
            ':departure': kind === 'L' ? 'clean' : 'abnormal',
            ':state': `${kind}#${sweepShard(ref(name))}`,
          },
        }),
      );
    }

    const found = await collect({ disconnectedAtOrBefore: T0 - 5_000, connectedBefore: 0 });

    expect(found).toEqual(expect.arrayContaining(['old-abnormal', 'old-clean']));
    expect(await departures(NS, 'L', T0)).not.toContain('old-clean');
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

  it('finds connected entries whose newest connect is in a liveness window, half-open', async () => {
    const base = T0 + 10_000_000;
    await sweepStore.connect(connectChange('live-before', 'l1', base - 1));
    await sweepStore.connect(connectChange('live-from', 'l2', base));
    await sweepStore.connect(connectChange('live-inside', 'l3', base + 500));
    await sweepStore.connect(connectChange('live-to', 'l4', base + 1000));
    counter.reset();

    const names: string[] = [];
    for await (const record of sweepStore.connectedIn([{ from: base, to: base + 1000 }], 100)) {
      names.push(record.entry.metadata.name);
    }

    expect(names.sort()).toEqual(['live-from', 'live-inside']);
    // Each shard's two ends (its oldest and newest connect), then the window only in the
    // shards whose connects reach into it: those of live-from and live-inside. A shard that
    // holds only live-before (ends before the window) or live-to (at its open end) is not read.
    const requests = counter.requests();
    const windowReads = requests.filter((r) =>
      String(r.input.KeyConditionExpression).includes('BETWEEN'),
    );
    expect(requests.map((r) => r.command)).toEqual(requests.map(() => 'Query'));
    expect(requests.length - windowReads.length).toBe(2 * SWEEP_SHARDS);
    const statesRead = windowReads.map(
      (r) => (r.input.ExpressionAttributeValues as Record<string, unknown>)[':state'],
    );
    const inWindow = ['live-from', 'live-inside'].map((name) => sweepShard(ref(name)));
    expect(new Set(statesRead)).toEqual(new Set(inWindow.map((shard) => sweepState('C', shard))));
    expect(statesRead).toHaveLength(new Set(statesRead).size);
  });

  it('reads every liveness window of a shard whose ends it could not read', async () => {
    const base = T0 + 30_000_000;
    await sweepStore.connect(connectChange('ends-unread', 'u1', base + 10));
    // A client whose reads of a shard's ends fail (the two one-item Queries), as a throttled
    // or failing store would: the windows are then read as if every shard held connects.
    const failing = createDocumentClient({ region: 'us-east-1', endpoint: own.endpoint });
    let endReadsRefused = 0;
    failing.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { KeyConditionExpression?: string };
        if (input.KeyConditionExpression === 'sweepState = :state') {
          endReadsRefused += 1;
          throw new Error('injected: the shard ends cannot be read');
        }
        return next(args);
      },
      { step: 'initialize', name: 'refuseShardEnds' },
    );
    const store = composeRegistry(failing, own.tableName);
    const failures: unknown[] = [];
    const found: string[] = [];
    try {
      const windows = [{ from: base, to: base + 1000 }];
      for await (const record of store.connectedIn(windows, 100, (e) => failures.push(e))) {
        found.push(record.entry.metadata.name);
      }
    } finally {
      failing.destroy();
    }

    expect(found).toEqual(['ends-unread']);
    expect(endReadsRefused).toBe(2 * SWEEP_SHARDS);
    // Nothing was lost, so the run has no failure to record.
    expect(failures).toEqual([]);
  });

  it("lets one namespace's connects cost at most the windows read before, and hide nothing of another", async () => {
    // A table of its own: no other test's connect widens a shard's ends.
    const fresh = await freshRegistry(own.endpoint, 'tenants');
    const tenantStore = fresh.store;
    const tenantCounter = countRequests(fresh.client);
    const base = T0;
    const windows = Array.from({ length: 10 }, (_, i) => ({
      from: base - (i + 1) * 1000,
      to: base - i * 1000,
      dueAfterMs: (i + 1) * 1000,
    }));
    // Namespace `evil` holds a shard's two ends at the oldest and newest window (two VMs it
    // chose the names of), so that shard is read in every window.
    const inEvil = (name: string, id: string, at: number): ConnectChange => {
      const change = connectChange(name, id, at);
      return {
        ...change,
        entry: { ...change.entry, metadata: { ...change.entry.metadata, namespace: 'evil' } },
        identity: { ...change.identity, namespace: 'evil' },
      };
    };
    const shop = 'shop-victim';
    const evilShard = (sweepShard(ref(shop)) + 1) % SWEEP_SHARDS;
    const names = Array.from({ length: 64 }, (_, i) => `evil-${i}`).filter(
      (name) => sweepShard({ namespace: 'evil', name }) === evilShard,
    );
    expect(names.length).toBeGreaterThanOrEqual(2);
    await tenantStore.connect(inEvil(names[0] as string, 'x1', base - 9_900));
    await tenantStore.connect(inEvil(names[1] as string, 'x2', base - 100));
    await tenantStore.connect(connectChange(shop, 'v1', base - 5_500));
    tenantCounter.reset();

    const found: string[] = [];
    try {
      for await (const record of tenantStore.connectedIn(windows, 100)) {
        found.push(`${record.entry.metadata.namespace}/${record.entry.metadata.name}`);
      }
    } finally {
      fresh.raw.destroy();
    }

    expect(found.sort()).toEqual([`evil/${names[0]}`, `evil/${names[1]}`, `${NS}/${shop}`].sort());
    const windowReads = tenantCounter
      .requests()
      .filter((r) => String(r.input.KeyConditionExpression).includes('BETWEEN'))
      .map((r) => (r.input.ExpressionAttributeValues as Record<string, unknown>)[':state']);
    // evil's shard: every window, as before the ends were read; shop's: only the window its VM
    // is in; the shards holding neither: none. Never more than windows x shards.
    expect(windowReads.filter((state) => state === sweepState('C', evilShard))).toHaveLength(10);
    expect(
      windowReads.filter((state) => state === sweepState('C', sweepShard(ref(shop)))),
    ).toHaveLength(1);
    expect(windowReads.length).toBe(11);
  });

  it('reads no liveness window of a shard whose connects are all outside it', async () => {
    // Newer than every connect the tests before wrote: all of them, and 'early', are older.
    const base = T0 + 40_000_000;
    await sweepStore.connect(connectChange('early', 'e1', base - 60_000));
    counter.reset();

    const found: string[] = [];
    const windows = [
      { from: base, to: base + 1000, dueAfterMs: 1000 },
      { from: base - 1000, to: base, dueAfterMs: 2000 },
    ];
    for await (const record of sweepStore.connectedIn(windows, 100)) {
      found.push(record.entry.metadata.name);
    }

    expect(found).toEqual([]);
    // The ends of every shard, and nothing else: no connect lies in either window.
    expect(counter.counts()).toEqual({ Query: 2 * SWEEP_SHARDS });
  });

  it('loses a conditional delete to a reconnect that landed after the read', async () => {
    await sweepStore.connect(connectChange('comes-back', 'r1', T0));
    await leaveOwn('comes-back', 'r1', T0 + 10);
    let read: EntryRecord | undefined;
    for await (const record of sweepStore.departuresOf(NS, 'D', T0 + 10)) {
      if (record.entry.metadata.name === 'comes-back') read = record;
    }
    await sweepStore.connect(connectChange('comes-back', 'r2', T0 + 20));

    expect(read && (await sweepStore.deleteSwept(read))).toBe('conflict');
    expect((await sweepStore.getEntry(ref('comes-back')))?.connection?.connectedAt).toBe(T0 + 20);
  });

  it('deletes a stale entry at the revision read, and calls a resent delete of it deleted', async () => {
    await sweepStore.connect(connectChange('lost-disconnect', 's1', T0 - 5));
    const record = await sweepStore.getEntry(ref('lost-disconnect'));
    counter.reset();

    expect(record && (await sweepStore.deleteSwept(record))).toBe('deleted');
    // The SDK resends a delete whose response was lost: the entry is gone, not in conflict.
    expect(record && (await sweepStore.deleteSwept(record))).toBe('deleted');

    expect(counter.requests()[0]?.input).toEqual({
      TableName: own.tableName,
      Key: { pk: `NS#${NS}`, sk: 'WE#lost-disconnect' },
      ConditionExpression: 'revision = :revision',
      ExpressionAttributeValues: { ':revision': 1 },
      // The deleted item comes back: its events go into the entry's history item.
      ReturnValues: 'ALL_OLD',
    });
    expect(await sweepStore.getEntry(ref('lost-disconnect'))).toBeUndefined();
  });
});
