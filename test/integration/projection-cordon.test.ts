import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ISTIO_API_VERSION } from '../../lib/domain/model.ts';
import { LINKERD_ANNOTATIONS } from '../../lib/projection/desired-linkerd.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import type { EndpointSliceObject, ServiceObject } from '../../lib/projection/objects.ts';
import { reconcile } from '../../lib/projection/projector.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';

/**
 * An operator's cordon reaches every projection target: the registry is the real store on
 * dynalite (the cordon written by its conditional write), the cluster the in-process
 * kube-apiserver STAND-IN (no real API server can run here), through the real client.
 */
const NS = 'shop';
const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);

let dynamo: TestDynamo;
let store: RegistrarStore;
let api: KubeApiServerStandIn;

beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});
beforeEach(async () => {
  store = (await freshRegistry(dynamo.endpoint)).store;
  api = await startKubeApiServerStandIn();
  await store.applyGroup({
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadGroup',
    metadata: {
      name: 'cart',
      namespace: NS,
      annotations: {
        [LINKERD_ANNOTATIONS.identity]:
          'spiffe://root.linkerd.cluster.local/{namespace}/{serviceAccount}',
        [LINKERD_ANNOTATIONS.serverName]:
          '{name}.{namespace}.external.identity.linkerd.cluster.local',
      },
    },
    spec: { template: { ports: { http: 8080 }, serviceAccount: 'cart' } },
  });
  for (const [index, address] of ['10.0.0.1', '10.0.0.2'].entries()) {
    const name = `cart-${address}`;
    await store.connect({
      entry: {
        apiVersion: ISTIO_API_VERSION,
        kind: 'WorkloadEntry',
        metadata: {
          name,
          namespace: NS,
          labels: { app: 'cart' },
          creationTimestamp: new Date(T0).toISOString(),
        },
        spec: { address, ports: { http: 8080 }, labels: { app: 'cart' }, serviceAccount: 'cart' },
      },
      autoRegistrationGroup: 'cart',
      origin: `cart|${address}|`,
      healthChecksEnabled: true,
      groupGeneration: 1,
      connectionId: `conn-${index}`,
      connectedAt: T0,
      controller: 'workload-registrar',
      identity: { principal: 'token:t', namespace: NS, serviceAccount: 'cart' },
      mayCreate: true,
      recordConnection: false,
    });
    await store.reportHealth({
      entry: { namespace: NS, name },
      connectionId: `conn-${index}`,
      healthy: true,
      at: T0 + 1000,
    });
  }
});
afterEach(async () => {
  await api.close();
});

function project() {
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  return reconcile(
    { store, cluster: createKubernetesCluster(config) },
    { targets: ['istio', 'linkerd', 'endpointslices'] },
  );
}

function service(publishNotReadyAddresses: boolean): ServiceObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: publishNotReadyAddresses ? 'cart-all' : 'cart', namespace: NS },
    spec: {
      type: 'ClusterIP',
      clusterIP: '172.20.0.10',
      selector: { app: 'cart' },
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      publishNotReadyAddresses,
    },
  };
}

function endpointsOf(serviceName: string) {
  const slices = (api.objects('EndpointSlice') as EndpointSliceObject[]).filter(
    (s) => s.metadata.labels?.['kubernetes.io/service-name'] === serviceName,
  );
  return Object.fromEntries(
    slices.flatMap((s) => s.endpoints).map((e) => [e.addresses[0], e.conditions]),
  );
}

describe('a cordoned entry in the cluster', () => {
  it('is not Healthy (Maintenance) in Istio, not Ready in Linkerd, neither ready nor serving in its slices; uncordon puts it back', async () => {
    api.put('Service', service(false));
    api.put('Service', service(true));
    const cordoned = { namespace: NS, name: 'cart-10.0.0.1' };
    expect((await store.cordon(cordoned, 'INC-9: draining the rack', T0 + 60_000)).outcome).toBe(
      'cordoned',
    );

    expect((await project()).errors).toEqual([]);

    expect(api.object('WorkloadEntry', NS, 'cart-10.0.0.1')?.status?.conditions).toEqual([
      {
        type: 'Healthy',
        status: 'False',
        reason: 'Maintenance',
        message: 'INC-9: draining the rack',
        lastProbeTime: new Date(T0 + 1000).toISOString(),
        lastTransitionTime: new Date(T0 + 60_000).toISOString(),
      },
    ]);
    expect(api.object('WorkloadEntry', NS, 'cart-10.0.0.2')?.status?.conditions?.[0]).toMatchObject(
      {
        status: 'True',
      },
    );
    expect(api.object('ExternalWorkload', NS, 'cart-10.0.0.1')?.status?.conditions).toEqual([
      {
        type: 'Ready',
        status: 'False',
        reason: 'Maintenance',
        message: 'INC-9: draining the rack',
        lastTransitionTime: new Date(T0 + 60_000).toISOString(),
      },
    ]);
    const off = { ready: false, serving: false, terminating: false };
    const on = { ready: true, serving: true, terminating: false };
    expect(endpointsOf('cart')).toEqual({ '10.0.0.1': off, '10.0.0.2': on });
    // A Service that wants unready endpoints still gets none an operator took out.
    expect(endpointsOf('cart-all')).toEqual({ '10.0.0.1': off, '10.0.0.2': on });

    expect((await store.uncordon(cordoned, T0 + 120_000)).outcome).toBe('uncordoned');
    expect((await project()).errors).toEqual([]);
    expect(api.object('WorkloadEntry', NS, 'cart-10.0.0.1')?.status?.conditions?.[0]).toMatchObject(
      {
        status: 'True',
        lastTransitionTime: new Date(T0 + 120_000).toISOString(),
      },
    );
    expect(
      api.object('ExternalWorkload', NS, 'cart-10.0.0.1')?.status?.conditions?.[0],
    ).toMatchObject({
      status: 'True',
      reason: 'Healthy',
    });
    expect(endpointsOf('cart')).toEqual({ '10.0.0.1': on, '10.0.0.2': on });
  });
});
