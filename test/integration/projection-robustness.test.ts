import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import { reconcile } from '../../lib/projection/projector.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { entryRecord, MemoryCatalog, T0 } from '../fixtures/projection-records.ts';

// Races, conflicts and API errors, through the real @kubernetes/client-node against the
// in-process kube-apiserver STAND-IN (no real API server can run here).

let api: KubeApiServerStandIn;
afterEach(async () => {
  await api.close();
});

function clusterOf(standIn: KubeApiServerStandIn) {
  const config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig);
  return createKubernetesCluster(config);
}

describe('projector robustness', () => {
  it('re-reads and retries when a write meets a newer resourceVersion (409), never overwriting', async () => {
    api = await startKubeApiServerStandIn();
    const catalog = new MemoryCatalog().set(entryRecord('vm-a'));
    const cluster = clusterOf(api);
    await reconcile({ store: catalog, cluster }, { targets: ['istio'] });
    catalog.set(entryRecord('vm-a', { labels: { app: 'cart', tier: 'v2' } }));
    // Someone else edits the object between the projector's read and its write.
    let interfered = false;
    api.beforeWrite = (kind, method, namespace, name) => {
      if (interfered || method !== 'PUT') return;
      interfered = true;
      const current = api.object(kind, namespace, name);
      if (current)
        api.put(kind, {
          ...current,
          metadata: { ...current.metadata, annotations: { touched: 'yes' } },
        });
    };

    const report = await reconcile({ store: catalog, cluster }, { targets: ['istio'] });

    expect(report.conflicts).toBe(1);
    expect(report.errors).toEqual([]);
    expect(api.requests.filter((r) => r.status === 409)).toHaveLength(1);
    const stored = api.object('WorkloadEntry', 'shop', 'vm-a');
    expect(stored?.metadata.labels?.tier).toBe('v2');
    expect(stored?.metadata.annotations?.touched).toBeUndefined();
  });

  it('two projectors racing on the same registry converge to one object per entry', async () => {
    api = await startKubeApiServerStandIn();
    const catalog = new MemoryCatalog().set(
      ...Array.from({ length: 30 }, (_, i) =>
        entryRecord(`vm-${i}`, { address: `10.0.1.${i}`, health: { status: 'True', at: T0 } }),
      ),
    );
    const [first, second] = await Promise.all([
      reconcile({ store: catalog, cluster: clusterOf(api) }, { targets: ['istio'] }),
      reconcile({ store: catalog, cluster: clusterOf(api) }, { targets: ['istio'] }),
    ]);

    expect([...first.errors, ...second.errors]).toEqual([]);
    // They did race: some creates lost with 409 AlreadyExists and were re-read.
    expect(first.conflicts + second.conflicts).toBeGreaterThan(0);
    expect(api.objects('WorkloadEntry')).toHaveLength(30);
    expect(
      api.objects('WorkloadEntry').every((o) => o.status?.conditions?.[0]?.status === 'True'),
    ).toBe(true);
    api.resetRequests();
    const third = await reconcile(
      { store: catalog, cluster: clusterOf(api) },
      { targets: ['istio'] },
    );
    expect(third.changes).toEqual([]);
    expect(api.writes()).toEqual([]);
  });

  it('says which CRD is missing when its kind is not served, and still runs the other targets', async () => {
    api = await startKubeApiServerStandIn({
      served: ['Service', 'EndpointSlice', 'WorkloadEntry', 'WorkloadGroup'],
    });
    const catalog = new MemoryCatalog().set(entryRecord('vm-a'));

    const report = await reconcile(
      { store: catalog, cluster: clusterOf(api) },
      { targets: ['linkerd', 'istio'] },
    );

    expect(report.errors).toEqual([
      {
        target: 'linkerd',
        kind: 'ExternalWorkload',
        namespace: undefined,
        message:
          'the cluster does not serve ExternalWorkload (workload.linkerd.io/v1beta1): install its CRD or disable the target that writes it',
      },
    ]);
    expect(api.objects('WorkloadEntry')).toHaveLength(1);
  });

  it('reports an object the API server refuses as invalid (422) and writes the others', async () => {
    api = await startKubeApiServerStandIn();
    const catalog = new MemoryCatalog().set(entryRecord('Bad_Name'), entryRecord('vm-good'));

    const report = await reconcile(
      { store: catalog, cluster: clusterOf(api) },
      { targets: ['istio'] },
    );

    expect(report.errors).toHaveLength(1);
    expect(report.errors[0]).toMatchObject({ kind: 'WorkloadEntry', name: 'Bad_Name' });
    expect(report.errors[0]?.message).toContain('422 Invalid');
    expect(api.objects('WorkloadEntry').map((o) => o.metadata.name)).toEqual(['vm-good']);
  });

  it('dry run reports the changes and writes nothing', async () => {
    api = await startKubeApiServerStandIn();
    const catalog = new MemoryCatalog().set(entryRecord('vm-a'));

    const report = await reconcile(
      { store: catalog, cluster: clusterOf(api) },
      { targets: ['istio'], dryRun: true },
    );

    expect(report.changes).toEqual([
      { kind: 'WorkloadEntry', action: 'created', namespace: 'shop', name: 'vm-a' },
    ]);
    expect(api.writes()).toEqual([]);
  });

  it('never sends a PATCH: every write is a PUT or POST with a JSON body', async () => {
    api = await startKubeApiServerStandIn();
    const catalog = new MemoryCatalog().set(
      entryRecord('vm-a', { health: { status: 'True', at: T0 } }),
    );
    await reconcile({ store: catalog, cluster: clusterOf(api) }, { targets: ['istio', 'linkerd'] });
    catalog.set(entryRecord('vm-a', { health: { status: 'False', at: T0 + 1 } }));
    await reconcile({ store: catalog, cluster: clusterOf(api) }, { targets: ['istio'] });

    const writes = api.writes();
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((w) => w.method !== 'PATCH')).toBe(true);
    expect(
      writes
        .filter((w) => w.method !== 'DELETE')
        .every((w) => w.contentType?.startsWith('application/json')),
    ).toBe(true);
  });
});
