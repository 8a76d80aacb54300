import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ISTIO_API_VERSION } from '../../lib/domain/model.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbRegistryStore } from '../../lib/store/dynamodb-registry-store.ts';
import { ensureTable } from '../../lib/store/ensure-table.ts';
import type { ConnectChange } from '../../lib/store/registry-store.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { type FaultProxy, startFaultProxy } from '../fixtures/fault-proxy.ts';

/**
 * The zone counters behind fail static, when a counter update is applied but its response is
 * lost and the SDK sends it again: counted once. Real store behind the fault proxy.
 */
let dynamo: TestDynamo;
let proxy: FaultProxy;
let store: DynamoDbRegistryStore;
let truth: DynamoDbRegistryStore;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  proxy = await startFaultProxy(dynamo.endpoint, 7);
  const tableName = `zones-${randomUUID()}`;
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: proxy.endpoint });
  await ensureTable(raw, tableName);
  store = new DynamoDbRegistryStore(documentClientFor(raw), tableName);
  truth = new DynamoDbRegistryStore(dynamo.client, tableName);
});
afterAll(async () => {
  await proxy?.close();
  await dynamo?.close();
});

const ZONE = 'eu-west-1/eu-west-1a';
const change = (name: string, connectionId: string, at: number): ConnectChange => ({
  entry: {
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadEntry',
    metadata: { name, namespace: 'shop' },
    spec: { address: '10.0.0.1', locality: `${ZONE}/rack-1` },
  },
  autoRegistrationGroup: 'web',
  origin: `origin-${name}`,
  mayCreate: true,
  recordConnection: false,
  healthChecksEnabled: false,
  groupGeneration: 1,
  connectionId,
  connectedAt: at,
  controller: 'workload-registrar',
  identity: { principal: 'token:t1' },
});

/** Fails the next zone-counter update after DynamoDB applied it (the SDK then retries it). */
function loseNextCounterResponse() {
  proxy.plan = {
    rate: 1,
    when: 'after',
    kind: 'internal',
    limit: proxy.counts.failedAfter + 1,
    match: (operation, body) => operation === 'UpdateItem' && body.includes('"ZONE"'),
  };
}

const counts = async () => (await truth.zoneCounts()).find((zone) => zone.zone === ZONE);

describe('zone counters under lost responses', () => {
  it('counts a connect and an abnormal departure once each when the SDK resends their updates', async () => {
    const now = Date.now();
    loseNextCounterResponse();
    expect(await store.connect(change('vm-1', 'c1', now))).toBe('created');
    expect(proxy.counts.failedAfter).toBe(1);
    expect(await counts()).toMatchObject({ connected: 1, away: 0 });

    loseNextCounterResponse();
    await store.leave({
      connectionId: 'c1',
      entry: { namespace: 'shop', name: 'vm-1' },
      at: now + 1_000,
      departure: 'abnormal',
    });
    expect(proxy.counts.failedAfter).toBe(2);
    expect(await counts()).toMatchObject({ connected: 0, away: 1 });
  });
});
