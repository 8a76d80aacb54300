import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ISTIO_API_VERSION, type WorkloadGroup } from '../../lib/domain/model.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import { reconcile } from '../../lib/projection/projector.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import {
  type FreshRegistry,
  freshRegistry,
  startTestDynamo,
  type TestDynamo,
} from '../fixtures/dynamo.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';

/**
 * The namespace index (issue 14): listing every namespace, for the projector's full reconcile
 * and the CLI's `-A`, is a Query of the index and one Query per namespace, never a Scan; the
 * index is written on the operator's path only; namespaces are never dropped from it; a table
 * from before it is safe for the projector and backfilled by the operator's first `-A`.
 * Real dynalite; the kube-apiserver stand-in for the projector.
 */

const CONNECTED_AT = Date.parse('2026-11-25T10:00:00Z');
let dynamo: TestDynamo;
let api: KubeApiServerStandIn;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  api = await startKubeApiServerStandIn();
});
afterAll(async () => {
  await api?.close();
  await dynamo?.close();
});

function group(namespace: string, name = 'web'): WorkloadGroup {
  return {
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadGroup',
    metadata: { name, namespace },
    spec: { template: { ports: { http: 8080 }, serviceAccount: 'web', labels: { app: 'web' } } },
  };
}

/** A VM's connect through the store's real write, as `$connect` makes it. */
async function connectVm(store: RegistrarStore, namespace: string, name: string) {
  await store.connect({
    entry: {
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadEntry',
      metadata: { name, namespace, labels: { app: 'web' } },
      spec: { address: '10.0.0.7', ports: { http: 8080 }, labels: { app: 'web' } },
    },
    autoRegistrationGroup: 'web',
    origin: `web/${name}`,
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: false,
    groupGeneration: 1,
    connectionId: `conn-${namespace}-${name}`,
    connectedAt: CONNECTED_AT,
    controller: 'workload-registrar',
    identity: { principal: 'token:t', namespace },
  });
}

function cluster() {
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  return createKubernetesCluster(config);
}

function project(store: RegistrarStore) {
  return reconcile({ store, cluster: cluster() }, { targets: ['istio'] });
}

/** The requests that named the index partition (its key or a condition on it). */
function indexRequests(requests: RequestCounter) {
  return requests
    .requests()
    .filter((request) => JSON.stringify(request.input).includes('NAMESPACES'));
}

describe('the namespace index', () => {
  let registry: FreshRegistry;
  let requests: RequestCounter;
  beforeAll(async () => {
    registry = await freshRegistry(dynamo.endpoint);
    requests = countRequests(registry.client);
  });

  it('indexes the namespace of an applied group and of a hand-made entry', async () => {
    await registry.store.applyGroup(group('shop'));
    await registry.store.applyEntry({
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadEntry',
      metadata: { name: 'db', namespace: 'data' },
      spec: { address: '10.0.9.9' },
    });

    expect(await registry.store.listNamespaces()).toEqual({
      namespaces: ['data', 'shop'],
      complete: true,
    });
  });

  it('lists every namespace by a Query of the index and one per namespace, never a Scan', async () => {
    await connectVm(registry.store, 'shop', 'web-1');
    requests.reset();

    const entries = await registry.store.listEntries();

    expect(entries.map((r) => `${r.entry.metadata.namespace}/${r.entry.metadata.name}`)).toEqual([
      'data/db',
      'shop/web-1',
    ]);
    // 1 index Query + 1 per namespace (data, shop).
    expect(requests.counts()).toEqual({ Query: 3 });
  });

  it('is never written by a connect or a disconnect: only the operator path writes it', async () => {
    requests.reset();

    await connectVm(registry.store, 'shop', 'web-2');
    await registry.store.leave({
      connectionId: 'conn-shop-web-2',
      entry: { namespace: 'shop', name: 'web-2' },
      at: CONNECTED_AT + 60_000,
      departure: 'clean',
    });

    expect(requests.counts().Query ?? 0).toBe(0);
    expect(indexRequests(requests)).toEqual([]);
  });

  it('keeps a namespace whose last group was deleted while its entries remain (orphan cascade), and after it is emptied', async () => {
    await registry.store.applyGroup(group('orphans'));
    await connectVm(registry.store, 'orphans', 'web-1');

    await registry.store.deleteGroup({ namespace: 'orphans', name: 'web' });
    expect((await registry.store.listNamespaces()).namespaces).toContain('orphans');
    expect((await registry.store.listEntries()).map((r) => r.entry.metadata.name)).toContain(
      'web-1',
    );

    await registry.store.deleteEntry({ namespace: 'orphans', name: 'web-1' });
    expect((await registry.store.listNamespaces()).namespaces).toContain('orphans');
  });
});

describe('a table from before the index (an upgrade)', () => {
  let registry: FreshRegistry;
  let requests: RequestCounter;

  /** Deletes the index items: what a table written by the code before the index holds. */
  async function forgetIndex() {
    const { namespaces } = await registry.store.listNamespaces();
    for (const sk of [...namespaces, '#complete']) {
      await registry.client.send(
        new DeleteCommand({ TableName: registry.tableName, Key: { pk: 'NAMESPACES', sk } }),
      );
    }
  }

  beforeAll(async () => {
    registry = await freshRegistry(dynamo.endpoint);
    requests = countRequests(registry.client);
    for (const namespace of ['old-a', 'old-b']) {
      await registry.store.applyGroup(group(namespace));
      await connectVm(registry.store, namespace, 'web-1');
    }
    await forgetIndex();
  });

  it('reads as incomplete, so nobody takes the empty index for an empty registry', async () => {
    expect(await registry.store.listNamespaces()).toEqual({ namespaces: [], complete: false });
  });

  it('keeps the projected objects of every namespace the cluster holds, reading them by Query', async () => {
    // Projected by the code before the upgrade (stream batches name their namespace).
    const before = await reconcile(
      { store: registry.store, cluster: cluster() },
      { targets: ['istio'] },
      { kind: 'namespaces', namespaces: [{ namespace: 'old-a' }, { namespace: 'old-b' }] },
    );
    expect(before.changes).toHaveLength(2);
    requests.reset();

    const report = await project(registry.store);

    expect(report.errors).toEqual([]);
    expect(report.changes).toEqual([]);
    expect(report.namespaces).toEqual({
      read: 2,
      indexComplete: false,
      fromCluster: ['old-a', 'old-b'],
    });
    expect(api.object('WorkloadEntry', 'old-a', 'web-1')).toBeDefined();
    expect(requests.counts().Scan).toBeUndefined();
  });

  it('is backfilled by the first listing across namespaces (one Scan), then never scanned again', async () => {
    requests.reset();

    const first = await registry.store.listEntries();
    expect(first.map((r) => r.entry.metadata.namespace)).toEqual(['old-a', 'old-b']);
    expect(requests.counts().Scan).toBe(1);

    requests.reset();
    const second = await registry.store.listGroups();
    expect(second).toHaveLength(2);
    expect(requests.counts()).toEqual({ Query: 3 });
    expect(await registry.store.listNamespaces()).toEqual({
      namespaces: ['old-a', 'old-b'],
      complete: true,
    });
  });

  it('then reconciles from the index alone, and removes the objects of a namespace once it is empty', async () => {
    await registry.store.deleteGroup({ namespace: 'old-b', name: 'web' });
    await registry.store.deleteEntry({ namespace: 'old-b', name: 'web-1' });
    api.resetRequests();

    const report = await project(registry.store);

    expect(report.namespaces).toEqual({ read: 2, indexComplete: true, fromCluster: [] });
    expect(report.changes).toEqual([
      { kind: 'WorkloadEntry', action: 'deleted', namespace: 'old-b', name: 'web-1' },
    ]);
    expect(api.object('WorkloadEntry', 'old-a', 'web-1')).toBeDefined();
  });
});
