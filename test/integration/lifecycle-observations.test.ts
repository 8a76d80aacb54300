import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { isConnected } from '../../lib/domain/entry-record.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { openClient, refusedUpgrade, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * Issue 8's observations, each as an agent would meet it: real WebSocket clients against the
 * local gateway, the real authorizer and handlers, and real storage (dynalite, or DynamoDB
 * Local in CI's second run). Each of these failed on f5feec1.
 */
const group = (name: string, serviceAccount?: string): WorkloadGroup => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name, namespace: 'shop' },
  spec: {
    metadata: { labels: { app: name } },
    template: { ports: { http: 8080 }, ...(serviceAccount ? { serviceAccount } : {}) },
  },
});

let dynamo: TestDynamo;
let runtime: LocalRuntime;
let store: RegistrarStore;
let tokens: DynamoDbTokenStore;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  runtime = await startLocalRuntime({
    port: 0,
    dynamoDbEndpoint: dynamo.endpoint,
    tableName: `observations-${randomUUID()}`,
    gracePeriodMs: 3_600_000,
    sweepIntervalMs: 3_600_000,
    logLevel: 'SILENT',
  });
  const client = createDocumentClient({ region: runtime.region, endpoint: dynamo.endpoint });
  store = composeRegistry(client, runtime.tableName);
  tokens = new DynamoDbTokenStore(client, runtime.tableName);
});
afterAll(async () => {
  await runtime?.close();
  await dynamo?.close();
});

async function token(serviceAccount?: string): Promise<Record<string, string>> {
  const created = createJoinToken({
    namespace: 'shop',
    ...(serviceAccount ? { serviceAccount } : {}),
    ttlMs: 3_600_000,
    now: Date.now(),
  });
  await tokens.putToken(created.stored);
  return { Authorization: `Bearer ${created.token}` };
}

const url = (groupName: string, ip: string) =>
  `${runtime.url}/?group=${groupName}&namespace=shop&ip=${encodeURIComponent(ip)}`;

const entry = (name: string) => store.getEntry({ namespace: 'shop', name });

describe('issue 8, observed through the local gateway', () => {
  it('ten simultaneous connects of one VM are all accepted and all hold the entry', async () => {
    await store.applyGroup(group('burst'));
    const auth = await token();
    const clients = await Promise.all(
      Array.from({ length: 10 }, () => openClient(url('burst', '10.8.0.1'), auth)),
    );
    const record = await entry('burst-10.8.0.1');
    expect(record?.connection?.connectionIds).toHaveLength(10);
    // Every one of them is a holder: each one's describe answers, none says NotRegistered.
    for (const client of clients) {
      expect(await client.request({ action: 'describe' })).toMatchObject({ ok: true });
    }

    // Nine leave; the survivor, whichever it is, still holds the entry and its health lands.
    const [survivor, ...rest] = clients as [TestClient, ...TestClient[]];
    await Promise.all(rest.map((client) => client.close()));
    await waitFor(
      async () => (await entry('burst-10.8.0.1'))?.connection?.connectionIds.length === 1,
      'the nine departures',
    );
    expect(isConnected((await entry('burst-10.8.0.1')) as never)).toBe(true);
    expect(
      await survivor.request({ action: 'health', healthy: false, message: 'HTTP 503' }),
    ).toMatchObject({ action: 'health', ok: true });
    const health = (await entry('burst-10.8.0.1'))?.health;
    expect(health).toMatchObject({ status: 'False', message: 'HTTP 503' });

    await survivor.close();
    await waitFor(async () => {
      const record = await entry('burst-10.8.0.1');
      return record !== undefined && !isConnected(record);
    }, 'the last departure');
  });

  it('answers health from a connection that holds nothing with NotRegistered (not ok:true)', async () => {
    await store.applyGroup(group('orphan'));
    const client = await openClient(url('orphan', '10.8.0.2'), await token());
    // The entry goes away under the open connection (deleted by hand).
    expect(await store.deleteEntry({ namespace: 'shop', name: 'orphan-10.8.0.2' })).toBe(true);
    const reply = await client.request({ action: 'health', healthy: true });
    expect(reply).toMatchObject({ ok: false, error: { code: 'NotRegistered' } });
    await client.close();
  });

  it('refuses addresses no VM is reached at, naming the field and the value', async () => {
    await store.applyGroup(group('addr'));
    const auth = await token();
    for (const ip of ['0.0.0.0', '::', '127.0.0.1', '::1', '169.254.169.254', '224.0.0.1']) {
      const refusal = await refusedUpgrade(url('addr', ip), auth);
      expect(refusal.statusCode).toBe(400);
      expect(refusal.body).toContain(ip);
      expect(refusal.body).toContain('ip');
    }
    expect(await store.listEntries('shop')).not.toContainEqual(
      expect.objectContaining({ autoRegistrationGroup: 'addr' }),
    );
  });

  it('lands an IPv4-mapped IPv6 address on the entry of the IPv4 address it carries', async () => {
    await store.applyGroup(group('mapped'));
    const auth = await token();
    const plain = await openClient(url('mapped', '10.8.0.3'), auth);
    const mapped = await openClient(url('mapped', '::ffff:10.8.0.3'), auth);
    expect((await entry('mapped-10.8.0.3'))?.connection?.connectionIds).toHaveLength(2);
    const names = (await store.listEntries('shop'))
      .filter((record) => record.autoRegistrationGroup === 'mapped')
      .map((record) => record.entry.metadata.name);
    expect(names).toEqual(['mapped-10.8.0.3']);
    await Promise.all([plain.close(), mapped.close()]);
  });

  it('reads the group at every connect: a deleted group refuses the very next connect, a changed one applies at once', async () => {
    await store.applyGroup(group('fresh'));
    const auth = await token();
    const first = await openClient(url('fresh', '10.8.0.4'), auth);
    await first.close();

    const changed = group('fresh');
    changed.spec.metadata = { labels: { app: 'fresh', version: 'v2' } };
    await store.applyGroup(changed);
    const second = await openClient(url('fresh', '10.8.0.5'), auth);
    expect((await entry('fresh-10.8.0.5'))?.entry.metadata.labels).toMatchObject({
      version: 'v2',
    });
    await second.close();

    expect(await store.deleteGroup({ namespace: 'shop', name: 'fresh' })).toBe(true);
    const refusal = await refusedUpgrade(url('fresh', '10.8.0.6'), auth);
    expect(refusal.statusCode).toBe(404);
    expect(await entry('fresh-10.8.0.6')).toBeUndefined();
  });

  it('after an operator drops the template service account, a token without it cannot take over an entry created with it', async () => {
    await store.applyGroup(group('owned', 'web'));
    const owner = await openClient(url('owned', '10.8.0.7'), await token('web'));
    await store.applyGroup(group('owned'));

    const intruder = await refusedUpgrade(url('owned', '10.8.0.7'), await token('other'));
    expect(intruder.statusCode).toBe(403);
    const record = await entry('owned-10.8.0.7');
    expect(record?.entry.spec.serviceAccount).toBe('web');
    expect(record?.connection?.connectionIds).toHaveLength(1);
    // A new VM of the group is free to join without one.
    const newcomer = await openClient(url('owned', '10.8.0.8'), await token('other'));
    await Promise.all([owner.close(), newcomer.close()]);
  });
});
