import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionsAuthenticatedBy } from '../../lib/auth/revocation.ts';
import { entryOrigin } from '../../lib/domain/entry-name.ts';
import { ISTIO_API_VERSION, type VerifiedIdentity } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbHeldEntries } from '../../lib/store/dynamodb-held-entries.ts';
import { RegistryTable } from '../../lib/store/dynamodb-table.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Who authenticated each holder, as the store records it (`by:<connection id>`) and as a
 * revocation reads it back: one Query of the namespace, whatever order the connects came in,
 * and nothing left behind when a holder goes.
 */
const NS = 'held';
const T0 = Date.parse('2026-03-01T12:00:00Z');
const TOKEN_A: VerifiedIdentity = { principal: 'token:aaaaaaaaaaaa', namespace: NS };
const TOKEN_B: VerifiedIdentity = { principal: 'token:bbbbbbbbbbbb', namespace: NS };

let dynamo: TestDynamo;
let store: RegistrarStore;
let held: DynamoDbHeldEntries;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  held = new DynamoDbHeldEntries(new RegistryTable(dynamo.client, dynamo.tableName));
});
afterAll(() => dynamo?.close());

function change(
  name: string,
  connectionId: string,
  at: number,
  identity: VerifiedIdentity,
): ConnectChange {
  return {
    entry: {
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadEntry',
      metadata: { name, namespace: NS },
      spec: { address: '10.0.0.1' },
    },
    autoRegistrationGroup: 'web',
    origin: entryOrigin('web', '10.0.0.1'),
    healthChecksEnabled: false,
    groupGeneration: 1,
    connectionId,
    connectedAt: at,
    controller: 'workload-registrar',
    identity,
    mayCreate: true,
    recordConnection: false,
  };
}

const byToken = (id: string) => ({ kind: 'token' as const, id, namespace: NS });

describe('holders and who authenticated them', () => {
  it('records each holder’s principal, also for a connect processed after a newer one', async () => {
    await store.connect(change('shared', 'conn-b', T0 + 10, TOKEN_B));
    // Older than the newest connect: it joins as a holder without becoming the identity.
    expect(await store.connect(change('shared', 'conn-a', T0, TOKEN_A))).toBe('joined');
    await store.connect(change('alone', 'conn-c', T0, TOKEN_A));
    await store.connect(change('gone', 'conn-d', T0, TOKEN_A));
    await store.leave({
      connectionId: 'conn-d',
      entry: { namespace: NS, name: 'gone' },
      at: T0 + 1,
    });

    expect(await connectionsAuthenticatedBy(held, byToken('aaaaaaaaaaaa'))).toEqual([
      { entry: { namespace: NS, name: 'alone' }, connectionId: 'conn-c' },
      { entry: { namespace: NS, name: 'shared' }, connectionId: 'conn-a' },
    ]);
    expect(await connectionsAuthenticatedBy(held, byToken('bbbbbbbbbbbb'))).toEqual([
      { entry: { namespace: NS, name: 'shared' }, connectionId: 'conn-b' },
    ]);
    const gone = await new RegistryTable(dynamo.client, dynamo.tableName).get({
      pk: `NS#${NS}`,
      sk: 'WE#gone',
    });
    expect(Object.keys(gone ?? {}).filter((key) => /^(by|held):/.test(key))).toEqual([]);
  });

  it('reads the namespace with one Query of its connected entries, never a Scan', async () => {
    const client = createDocumentClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
    const counter = countRequests(client);
    const reader = new DynamoDbHeldEntries(new RegistryTable(client, dynamo.tableName));
    try {
      await connectionsAuthenticatedBy(reader, byToken('aaaaaaaaaaaa'));
    } finally {
      client.destroy();
    }

    expect(counter.counts()).toEqual({ Query: 1 });
    expect(counter.requests()[0]?.input).toEqual({
      TableName: dynamo.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :entries)',
      FilterExpression: 'attribute_exists(conns)',
      ExpressionAttributeValues: { ':pk': `NS#${NS}`, ':entries': 'WE#' },
    });
  });
});
