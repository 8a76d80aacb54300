import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LINKERD_ANNOTATIONS } from '../../lib/projection/desired-linkerd.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import { reconcile } from '../../lib/projection/projector.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { entryRecord, MemoryCatalog, storedGroup, T0 } from '../fixtures/projection-records.ts';

// Through the real @kubernetes/client-node against the in-process kube-apiserver STAND-IN
// (no real API server can run here).

let api: KubeApiServerStandIn;
let catalog: MemoryCatalog;

const LINKERD_GROUP = storedGroup('vm', 'shop', {
  [LINKERD_ANNOTATIONS.identity]:
    'spiffe://root.linkerd.cluster.local/{namespace}/{serviceAccount}',
  [LINKERD_ANNOTATIONS.serverName]: '{name}.{namespace}.external.identity.linkerd.cluster.local',
});

function project() {
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  return reconcile(
    { store: catalog, cluster: createKubernetesCluster(config) },
    { targets: ['linkerd'] },
  );
}

beforeEach(async () => {
  api = await startKubeApiServerStandIn();
  catalog = new MemoryCatalog();
  catalog.groups = [LINKERD_GROUP];
});
afterEach(async () => {
  await api.close();
});

describe('linkerd ExternalWorkloads', () => {
  it('creates one ExternalWorkload per entry with meshTLS from the group, ports and workloadIPs', async () => {
    catalog.set(
      entryRecord('vm-a', {
        ports: { http: 8080, grpc: 9090 },
        health: { status: 'True', at: T0 + 1000 },
      }),
    );

    const report = await project();

    expect(report.errors).toEqual([]);
    const stored = api.object('ExternalWorkload', 'shop', 'vm-a');
    expect(stored?.apiVersion).toBe('workload.linkerd.io/v1beta1');
    expect(stored?.metadata.labels).toEqual({
      app: 'cart',
      'app.kubernetes.io/managed-by': 'workload-registrar',
    });
    expect(stored?.spec).toEqual({
      meshTLS: {
        identity: 'spiffe://root.linkerd.cluster.local/shop/cart',
        serverName: 'vm-a.shop.external.identity.linkerd.cluster.local',
      },
      ports: [
        { name: 'http', port: 8080, protocol: 'TCP' },
        { name: 'grpc', port: 9090, protocol: 'TCP' },
      ],
      workloadIPs: [{ ip: '10.0.0.1' }],
    });
    expect(stored?.status?.conditions).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'Healthy',
        lastTransitionTime: '2025-01-02T03:04:06.000Z',
      },
    ]);
  });

  it('writes Ready False for a disconnected entry, and flips it back when it reconnects healthy', async () => {
    catalog.set(entryRecord('vm-a', { disconnectedAt: T0 + 60_000 }));
    await project();
    expect(api.object('ExternalWorkload', 'shop', 'vm-a')?.status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'Disconnected',
    });

    catalog.set(
      entryRecord('vm-a', {
        connectedAt: T0 + 120_000,
        health: { status: 'True', at: T0 + 121_000 },
      }),
    );
    await project();

    expect(api.object('ExternalWorkload', 'shop', 'vm-a')?.status?.conditions?.[0]).toMatchObject({
      status: 'True',
      reason: 'Healthy',
    });
  });

  it('writes Ready False for a connected but unhealthy entry', async () => {
    catalog.set(
      entryRecord('vm-a', {
        health: { status: 'False', at: T0 + 1000, message: 'connection refused' },
      }),
    );
    await project();
    expect(api.object('ExternalWorkload', 'shop', 'vm-a')?.status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'Unhealthy',
      message: 'connection refused',
    });
  });

  it('reports an entry whose group lacks the meshTLS annotations with a clear error and writes nothing for it', async () => {
    catalog.groups = [storedGroup('vm', 'shop', {})];
    catalog.set(entryRecord('vm-a'));

    const report = await project();

    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]?.message).toContain(
      "WorkloadGroup shop/vm has no annotation 'workload-registrar/linkerd-identity'",
    );
    expect(api.objects('ExternalWorkload')).toEqual([]);
  });

  it('keeps an existing ExternalWorkload when its group loses the annotations (a mistake must not drop a VM)', async () => {
    catalog.set(entryRecord('vm-a'));
    await project();
    catalog.groups = [storedGroup('vm', 'shop', {})];

    const report = await project();

    expect(report.changes).toEqual([]);
    expect(api.object('ExternalWorkload', 'shop', 'vm-a')).toBeDefined();
  });
});
