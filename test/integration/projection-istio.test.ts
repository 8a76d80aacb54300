import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
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
    });
    expect(stored?.metadata.annotations).toEqual(rendered.metadata.annotations);
    expect(stored?.metadata.annotations?.['istio.io/connectedAt']).toBe('2025-01-02T03:04:05.000Z');
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
