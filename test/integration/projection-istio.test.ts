import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
import {
  clusterAnnotations,
  ISTIOD_CONTROLLER_KEYS,
  REGISTRAR_ANNOTATIONS,
} from '../../lib/projection/istiod-coexistence.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import { reconcile } from '../../lib/projection/projector.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { entryRecord, MemoryCatalog, T0 } from '../fixtures/projection-records.ts';

// Runs the projector through the real @kubernetes/client-node against an in-process
// STAND-IN for kube-apiserver (test/fixtures/kube-apiserver-stand-in.ts): no real API server
// can run on these machines.

let api: KubeApiServerStandIn;
let catalog: MemoryCatalog;

function project(targets: ('istio' | 'linkerd' | 'endpointslices')[] = ['istio']) {
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  return reconcile({ store: catalog, cluster: createKubernetesCluster(config) }, { targets });
}

function addressOf(name: string): string | undefined {
  return (api.object('WorkloadEntry', 'shop', name)?.spec as { address?: string } | undefined)
    ?.address;
}

beforeEach(async () => {
  api = await startKubeApiServerStandIn();
  catalog = new MemoryCatalog();
});
afterEach(async () => {
  await api.close();
});

describe('istio WorkloadEntries', () => {
  it('creates one WorkloadEntry per registry entry in the shape istiod writes', async () => {
    const record = entryRecord('vm-10-0-0-1', { health: { status: 'True', at: T0 + 1000 } });
    catalog.set(record);
    api.put('WorkloadGroup', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'vm', namespace: 'shop', uid: 'cluster-group-uid' },
      spec: {},
    });

    const report = await project();

    expect(report.errors).toEqual([]);
    const stored = api.object('WorkloadEntry', 'shop', 'vm-10-0-0-1');
    const rendered = renderWorkloadEntry(record);
    expect(stored?.metadata.labels).toEqual({
      app: 'cart',
      'app.kubernetes.io/managed-by': 'workload-registrar',
      'service.istio.io/workload-name': 'vm',
    });
    // istiod's controller keys under the registrar's own (istiod-coexistence.ts), the rest as rendered.
    expect(stored?.metadata.annotations).toEqual(clusterAnnotations(rendered.metadata.annotations));
    expect(stored?.metadata.annotations?.[REGISTRAR_ANNOTATIONS.connectedAt]).toBe(
      '2025-01-02T03:04:05.000Z',
    );
    for (const key of ISTIOD_CONTROLLER_KEYS) {
      expect(stored?.metadata.annotations?.[key]).toBeUndefined();
    }
    expect(stored?.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        name: 'vm',
        uid: 'cluster-group-uid',
        controller: true,
      },
    ]);
    expect(stored?.spec).toEqual(rendered.spec);
    expect(stored?.status?.conditions).toEqual(rendered.status?.conditions);
  });

  it('leaves out the ownerReference when the group is not in the cluster', async () => {
    catalog.set(entryRecord('vm-a'));
    await project();
    expect(api.object('WorkloadEntry', 'shop', 'vm-a')?.metadata.ownerReferences).toBeUndefined();
  });

  it('writes the Healthy condition through the status subresource when health flips', async () => {
    catalog.set(entryRecord('vm-a', { health: { status: 'True', at: T0 } }));
    await project();
    api.resetRequests();

    catalog.set(
      entryRecord('vm-a', { health: { status: 'False', at: T0 + 5000, message: 'probe failed' } }),
    );
    const report = await project();

    expect(api.writes().map((w) => `${w.method} ${w.path}`)).toEqual([
      'PUT /apis/networking.istio.io/v1/namespaces/shop/workloadentries/vm-a/status',
    ]);
    expect(report.changes).toEqual([
      { kind: 'WorkloadEntry', action: 'status-updated', namespace: 'shop', name: 'vm-a' },
    ]);
    const condition = api.object('WorkloadEntry', 'shop', 'vm-a')?.status?.conditions?.[0];
    expect(condition).toMatchObject({ type: 'Healthy', status: 'False', message: 'probe failed' });
  });

  it('writes nothing when nothing changed', async () => {
    catalog.set(
      entryRecord('vm-a', { health: { status: 'True', at: T0 } }),
      entryRecord('vm-b', { address: '10.0.0.2' }),
    );
    await project();
    api.resetRequests();

    const report = await project();

    expect(report.changes).toEqual([]);
    expect(api.writes()).toEqual([]);
  });

  it('deletes the WorkloadEntry of a deleted registry entry', async () => {
    catalog.set(entryRecord('vm-a'), entryRecord('vm-b', { address: '10.0.0.2' }));
    await project();
    catalog.delete('shop', 'vm-a');

    const report = await project();

    expect(report.changes).toEqual([
      { kind: 'WorkloadEntry', action: 'deleted', namespace: 'shop', name: 'vm-a' },
    ]);
    expect(api.objects('WorkloadEntry').map((o) => o.metadata.name)).toEqual(['vm-b']);
  });

  it('puts back a WorkloadEntry edited by hand', async () => {
    catalog.set(entryRecord('vm-a'));
    await project();
    const edited = api.object('WorkloadEntry', 'shop', 'vm-a');
    if (!edited) throw new Error('not created');
    api.put('WorkloadEntry', {
      ...edited,
      spec: { ...(edited.spec as object), address: '192.168.9.9' },
    });

    await project();

    expect(addressOf('vm-a')).toBe('10.0.0.1');
  });

  it('leaves alone and reports an unmanaged WorkloadEntry with the same name', async () => {
    api.put('WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: 'vm-a', namespace: 'shop' },
      spec: { address: '1.2.3.4' },
    });
    catalog.set(entryRecord('vm-a'));

    const report = await project();

    expect(report.unmanaged).toEqual([{ kind: 'WorkloadEntry', namespace: 'shop', name: 'vm-a' }]);
    expect(report.errors).toEqual([]);
    expect(addressOf('vm-a')).toBe('1.2.3.4');
  });

  it('does not delete unmanaged WorkloadEntries that the registry does not know', async () => {
    api.put('WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: 'by-hand', namespace: 'shop' },
      spec: { address: '1.2.3.4' },
    });

    await project();

    expect(api.object('WorkloadEntry', 'shop', 'by-hand')).toBeDefined();
  });
});

describe('a stream batch reconciles only the entries it changed', () => {
  function projectChanged(changedEntries: string[], targets: ('istio' | 'linkerd')[] = ['istio']) {
    const config = new KubeConfig();
    config.loadFromString(api.kubeconfig);
    return reconcile(
      { store: catalog, cluster: createKubernetesCluster(config) },
      { targets },
      { kind: 'namespaces', namespaces: [{ namespace: 'shop', changedEntries }] },
    );
  }

  it('reads and writes the same whether the namespace holds 10 entries or 200', async () => {
    const requestsFor = async (size: number) => {
      catalog = new MemoryCatalog();
      for (let i = 0; i < size; i++) catalog.set(entryRecord(`vm-${i}`));
      await project(); // everything in place
      catalog.set(entryRecord('vm-3', { address: '10.0.9.9' }));
      api.resetRequests();
      catalog.reads = { listNamespaces: 0, listEntries: 0, getEntry: 0 };
      const report = await projectChanged(['vm-3']);
      expect(report.errors).toEqual([]);
      expect(addressOf('vm-3')).toBe('10.0.9.9');
      return {
        registry: { ...catalog.reads },
        cluster: api.requests.map((r) => `${r.method} ${r.path.replace(/\?.*$/, '')}`),
      };
    };
    const small = await requestsFor(10);
    const large = await requestsFor(200);
    expect(large).toEqual(small);
    // One registry read for the changed entry, no namespace listing; in the cluster the one
    // object, the namespace's WorkloadGroups (for owner references), and the update.
    expect(small.registry).toEqual({ listNamespaces: 0, listEntries: 0, getEntry: 1 });
    expect(small.cluster).toEqual([
      'GET /apis/networking.istio.io/v1/namespaces/shop/workloadentries/vm-3',
      'GET /apis/networking.istio.io/v1/namespaces/shop/workloadgroups',
      'PUT /apis/networking.istio.io/v1/namespaces/shop/workloadentries/vm-3',
    ]);
  });

  it('deletes the object of an entry the batch saw deleted, and touches no other', async () => {
    for (const name of ['vm-a', 'vm-b']) catalog.set(entryRecord(name));
    await project();
    catalog.delete('shop', 'vm-a');
    const report = await projectChanged(['vm-a']);
    expect(report.errors).toEqual([]);
    expect(api.object('WorkloadEntry', 'shop', 'vm-a')).toBeUndefined();
    expect(api.object('WorkloadEntry', 'shop', 'vm-b')).toBeDefined();
  });

  it('leaves an object of the same name that it does not manage alone', async () => {
    api.put('WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: 'vm-x', namespace: 'shop', labels: { owner: 'someone' } },
      spec: { address: '10.1.1.1' },
    });
    const report = await projectChanged(['vm-x']);
    expect(report.errors).toEqual([]);
    expect(api.object('WorkloadEntry', 'shop', 'vm-x')?.spec).toEqual({ address: '10.1.1.1' });
  });
});
