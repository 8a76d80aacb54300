import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ISTIO_API_VERSION,
  type WorkloadEntry,
  type WorkloadGroup,
} from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

let dynamo: TestDynamo;
let store: RegistrarStore;
let requests: RequestCounter;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  requests = countRequests(dynamo.client);
});
afterAll(async () => {
  await dynamo?.close();
});

function group(namespace: string, name: string, port = 8080): WorkloadGroup {
  return {
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadGroup',
    metadata: { name, namespace, labels: { team: 'a' } },
    spec: { template: { ports: { http: port }, serviceAccount: name } },
  };
}

function entry(namespace: string, name: string, address = '10.0.0.1'): WorkloadEntry {
  return {
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadEntry',
    metadata: { name, namespace },
    spec: { address },
  };
}

describe('groups', () => {
  it('creates a group with a uid and generation 1', async () => {
    const result = await store.applyGroup(group('g1', 'web'));

    expect(result.outcome).toBe('created');
    expect(result.group.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.group.metadata.generation).toBe(1);
    expect(await store.getGroup({ namespace: 'g1', name: 'web' })).toEqual({
      group: result.group,
      generation: 1,
    });
  });

  it('bumps the generation when the spec changes and keeps the uid', async () => {
    const created = await store.applyGroup(group('g2', 'web'));

    const updated = await store.applyGroup(group('g2', 'web', 9090));

    expect(updated.outcome).toBe('updated');
    expect(updated.group.metadata.generation).toBe(2);
    expect(updated.group.metadata.uid).toBe(created.group.metadata.uid);
  });

  it('keeps the generation when only labels change, and reports an identical apply as unchanged', async () => {
    await store.applyGroup(group('g3', 'web'));
    const relabelled = {
      ...group('g3', 'web'),
      metadata: { name: 'web', namespace: 'g3', labels: { team: 'b' } },
    };

    expect((await store.applyGroup(relabelled)).group.metadata.generation).toBe(1);
    expect((await store.applyGroup(relabelled)).outcome).toBe('unchanged');
  });

  it('lists a namespace with a Query, and every namespace with Queries of the index and of each, no Scan', async () => {
    await store.applyGroup(group('g4', 'a'));
    await store.applyGroup(group('g4', 'b'));
    await store.applyGroup(group('g5', 'c'));
    requests.reset();

    const inNamespace = await store.listGroups('g4');

    expect(inNamespace.map((stored) => stored.group.metadata.name)).toEqual(['a', 'b']);
    expect(requests.counts()).toEqual({ Query: 1 });
    const all = (await store.listGroups()).map(
      (stored) => `${stored.group.metadata.namespace}/${stored.group.metadata.name}`,
    );
    expect(all).toEqual(expect.arrayContaining(['g4/a', 'g4/b', 'g5/c']));
    const { namespaces } = await store.listNamespaces();
    expect(namespaces).toEqual(expect.arrayContaining(['g4', 'g5']));
    expect(requests.counts()).toEqual({ Query: 1 + 1 + namespaces.length + 1 });
  });

  it('deletes a group once', async () => {
    await store.applyGroup(group('g6', 'web'));

    expect(await store.deleteGroup({ namespace: 'g6', name: 'web' })).toBe(true);
    expect(await store.deleteGroup({ namespace: 'g6', name: 'web' })).toBe(false);
    expect(await store.getGroup({ namespace: 'g6', name: 'web' })).toBeUndefined();
  });
});

describe('hand-made entries', () => {
  it('creates, updates and reports an unchanged apply', async () => {
    expect(await store.applyEntry(entry('e1', 'db'))).toBe('created');
    expect(await store.applyEntry(entry('e1', 'db'))).toBe('unchanged');
    expect(await store.applyEntry(entry('e1', 'db', '10.0.0.2'))).toBe('updated');

    const record = await store.getEntry({ namespace: 'e1', name: 'db' });
    expect(record?.entry.spec.address).toBe('10.0.0.2');
    expect(record?.autoRegistrationGroup).toBeUndefined();
    expect(record?.revision).toBe(2);
  });

  it('refuses to overwrite an auto-registered entry', async () => {
    await store.connect({
      entry: entry('e2', 'vm'),
      autoRegistrationGroup: 'web',
      origin: 'test-origin',
      mayCreate: true,
      recordConnection: false,
      healthChecksEnabled: false,
      groupGeneration: 1,
      connectionId: 'e2-c',
      connectedAt: 1_000,
      controller: 'workload-registrar',
      identity: { principal: 'token:t' },
    });

    expect(await store.applyEntry(entry('e2', 'vm', '192.168.1.1'))).toBe('conflict');
    expect((await store.getEntry({ namespace: 'e2', name: 'vm' }))?.entry.spec.address).toBe(
      '10.0.0.1',
    );
  });

  it('lists every entry of a namespace across result pages', async () => {
    // 1 MB is DynamoDB's page size: 12 entries of ~100 KB need at least two pages.
    const big = { note: 'x'.repeat(100_000) };
    for (let i = 0; i < 12; i++) {
      await store.applyEntry({
        ...entry('e3', `big-${i}`),
        metadata: { name: `big-${i}`, namespace: 'e3', annotations: big },
      });
    }
    requests.reset();

    const listed = await store.listEntries('e3');

    expect(listed).toHaveLength(12);
    expect(requests.counts().Query).toBeGreaterThan(1);
  });

  it('deletes an entry and the records of the connections it listed', async () => {
    await store.connect({
      entry: entry('e4', 'vm'),
      autoRegistrationGroup: 'web',
      origin: 'test-origin',
      mayCreate: true,
      recordConnection: false,
      healthChecksEnabled: false,
      groupGeneration: 1,
      connectionId: 'e4-c',
      connectedAt: 1_000,
      controller: 'workload-registrar',
      identity: { principal: 'token:t' },
    });

    expect(await store.deleteEntry({ namespace: 'e4', name: 'vm' })).toBe(true);
    expect(await store.getConnection('e4-c')).toBeUndefined();
    expect(await store.deleteEntry({ namespace: 'e4', name: 'vm' })).toBe(false);
  });
});
