import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import type { EndpointSliceObject, ServiceObject } from '../../lib/projection/objects.ts';
import { type ReconcileScope, reconcile } from '../../lib/projection/projector.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { entryRecord, MemoryCatalog, T0 } from '../fixtures/projection-records.ts';

// EndpointSlices through the real @kubernetes/client-node against the in-process
// kube-apiserver STAND-IN (no real API server can run here).

let api: KubeApiServerStandIn;
let catalog: MemoryCatalog;

function project(scope?: ReconcileScope) {
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  return reconcile(
    { store: catalog, cluster: createKubernetesCluster(config) },
    { targets: ['endpointslices'] },
    scope,
  );
}

function service(name: string, spec: Partial<ServiceObject['spec']>): ServiceObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'shop', labels: { team: 'payments' } },
    spec: {
      type: 'ClusterIP',
      clusterIP: '172.20.0.10',
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      ...spec,
    },
  };
}

function slicesOf(serviceName: string): EndpointSliceObject[] {
  return (api.objects('EndpointSlice') as EndpointSliceObject[]).filter(
    (s) => s.metadata.labels?.['kubernetes.io/service-name'] === serviceName,
  );
}

function many(count: number, labels = { app: 'cart' }) {
  return Array.from({ length: count }, (_, i) =>
    entryRecord(`vm-${String(i).padStart(3, '0')}`, {
      address: `10.1.${Math.floor(i / 250)}.${i % 250}`,
      labels,
      health: { status: 'True', at: T0 },
    }),
  );
}

beforeEach(async () => {
  api = await startKubeApiServerStandIn();
  catalog = new MemoryCatalog();
});
afterEach(async () => {
  await api.close();
});

describe('EndpointSlices', () => {
  it('packs 250 entries behind one Service into slices of 100, 100 and 50 with the controller labels and owner', async () => {
    const cart = api.put('Service', service('cart', { selector: { app: 'cart' } }));
    catalog.set(...many(250));

    const report = await project();

    expect(report.errors).toEqual([]);
    const slices = slicesOf('cart');
    expect(slices.map((s) => s.endpoints.length).sort((a, b) => b - a)).toEqual([100, 100, 50]);
    for (const slice of slices) {
      expect(slice.addressType).toBe('IPv4');
      expect(slice.ports).toEqual([{ name: 'http', port: 8080, protocol: 'TCP' }]);
      expect(slice.metadata.labels).toEqual({
        team: 'payments',
        'kubernetes.io/service-name': 'cart',
        'endpointslice.kubernetes.io/managed-by': 'workload-registrar.mesh',
        'app.kubernetes.io/managed-by': 'workload-registrar',
      });
      expect(slice.metadata.ownerReferences).toEqual([
        {
          apiVersion: 'v1',
          kind: 'Service',
          name: 'cart',
          uid: cart.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    expect(slices.flatMap((s) => s.endpoints).find((e) => e.targetRef.name === 'vm-000')).toEqual({
      addresses: ['10.1.0.0'],
      conditions: { ready: true, serving: true, terminating: false },
      targetRef: {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        namespace: 'shop',
        name: 'vm-000',
      },
    });
  });

  it('updates the one slice holding a changed entry in place, creating and deleting nothing', async () => {
    api.put('Service', service('cart', { selector: { app: 'cart' } }));
    catalog.set(...many(250));
    await project();
    const before = slicesOf('cart')
      .map((s) => s.metadata.name)
      .sort();
    api.resetRequests();

    catalog.set(
      entryRecord('vm-123', { address: '10.1.0.123', health: { status: 'False', at: T0 + 1000 } }),
    );
    await project();

    expect(api.writes().map((w) => w.method)).toEqual(['PUT']);
    expect(
      slicesOf('cart')
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(before);
    const endpoint = slicesOf('cart')
      .flatMap((s) => s.endpoints)
      .find((e) => e.targetRef.name === 'vm-123');
    expect(endpoint?.conditions).toEqual({ ready: false, serving: false, terminating: false });
  });

  it('publishes an unhealthy or disconnected entry with ready: false instead of dropping it', async () => {
    api.put('Service', service('cart', { selector: { app: 'cart' } }));
    catalog.set(
      entryRecord('vm-sick', { address: '10.0.0.1', health: { status: 'False', at: T0 } }),
      entryRecord('vm-gone', { address: '10.0.0.2', disconnectedAt: T0 + 5 }),
    );

    await project();

    const endpoints = slicesOf('cart').flatMap((s) => s.endpoints);
    expect(endpoints.map((e) => [e.targetRef.name, e.conditions.ready])).toEqual([
      ['vm-gone', false],
      ['vm-sick', false],
    ]);
  });

  it('moves entries between Services when a selector changes', async () => {
    const cart = api.put(
      'Service',
      service('cart', { selector: { app: 'cart' } }),
    ) as ServiceObject;
    api.put('Service', service('cart-v2', { selector: { app: 'cart', version: 'v2' } }));
    catalog.set(
      entryRecord('vm-1', { address: '10.0.0.1', labels: { app: 'cart', version: 'v1' } }),
      entryRecord('vm-2', { address: '10.0.0.2', labels: { app: 'cart', version: 'v2' } }),
    );
    await project();
    expect(slicesOf('cart-v2').flatMap((s) => s.endpoints.map((e) => e.targetRef.name))).toEqual([
      'vm-2',
    ]);

    api.put('Service', {
      ...cart,
      spec: { ...cart.spec, selector: { app: 'cart', version: 'v1' } },
    });
    await project();

    expect(slicesOf('cart').flatMap((s) => s.endpoints.map((e) => e.targetRef.name))).toEqual([
      'vm-1',
    ]);
    expect(slicesOf('cart-v2').flatMap((s) => s.endpoints.map((e) => e.targetRef.name))).toEqual([
      'vm-2',
    ]);
  });

  it('gives ExternalName Services and Services without a selector no slices', async () => {
    api.put('Service', service('alias', { type: 'ExternalName', selector: { app: 'cart' } }));
    api.put('Service', service('manual', {}));
    catalog.set(entryRecord('vm-1'));

    await project();

    expect(api.objects('EndpointSlice')).toEqual([]);
  });

  it('removes its slices when a Service loses its selector', async () => {
    const cart = api.put(
      'Service',
      service('cart', { selector: { app: 'cart' } }),
    ) as ServiceObject;
    catalog.set(entryRecord('vm-1'));
    await project();
    expect(slicesOf('cart')).toHaveLength(1);

    api.put('Service', { ...cart, spec: { ...cart.spec, selector: undefined } });
    await project();

    expect(slicesOf('cart')).toEqual([]);
  });

  it('never touches EndpointSlices of another manager, such as the built-in controller', async () => {
    api.put('Service', service('cart', { selector: { app: 'cart' } }));
    api.put('EndpointSlice', {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'cart-pods',
        namespace: 'shop',
        labels: {
          'kubernetes.io/service-name': 'cart',
          'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
        },
      },
      addressType: 'IPv4',
      endpoints: [],
      ports: [],
    });
    catalog.set(entryRecord('vm-1'));

    await project();

    expect(api.object('EndpointSlice', 'shop', 'cart-pods')?.resourceVersion).toBeUndefined();
    expect(
      (api.object('EndpointSlice', 'shop', 'cart-pods') as EndpointSliceObject).endpoints,
    ).toEqual([]);
    expect(slicesOf('cart')).toHaveLength(2);
  });

  it('on the fast path plans only the Services that select the changed entries', async () => {
    api.put('Service', service('cart', { selector: { app: 'cart' } }));
    api.put('Service', service('web', { selector: { app: 'web' } }));
    catalog.set(
      entryRecord('vm-1', { address: '10.0.0.1', health: { status: 'True', at: T0 } }),
      entryRecord('vm-2', {
        address: '10.0.0.2',
        labels: { app: 'web' },
        health: { status: 'True', at: T0 },
      }),
    );
    await project();
    // A hand edit to the web slice: only a full reconcile should repair it.
    const web = slicesOf('web')[0] as EndpointSliceObject;
    api.put('EndpointSlice', { ...web, endpoints: [] });
    catalog.set(
      entryRecord('vm-1', { address: '10.0.0.1', health: { status: 'False', at: T0 + 1 } }),
    );
    api.resetRequests();

    await project({
      kind: 'namespaces',
      namespaces: [{ namespace: 'shop', changedEntries: ['vm-1'] }],
    });

    expect(api.writes().map((w) => w.path)).toEqual([
      `/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices/${slicesOf('cart')[0]?.metadata.name}`,
    ]);
    expect(slicesOf('web')[0]?.endpoints).toEqual([]);
    await project();
    expect(slicesOf('web')[0]?.endpoints).toHaveLength(1);
  });
});
