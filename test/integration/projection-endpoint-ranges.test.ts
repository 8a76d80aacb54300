import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OptionsError, parseLocalOptions } from '../../infra/local/options.ts';
import { startLocalRuntime } from '../../infra/local/runtime.ts';
import type { EndpointSliceObject } from '../../lib/projection/objects.ts';
import { type AgentTestbed, testbedFor } from '../fixtures/agent-testbed.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { eventually, openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * The CVE-2021-25740 pattern, played by a token holder of `shop`: it registers the cluster's
 * API Service IP and a pod IP of another namespace with labels its own Service selects, so
 * the projector would put them in `shop`'s EndpointSlices and Istio WorkloadEntries. Run as
 * `npm start -- --kubeconfig K --projection-targets istio,endpointslices --cluster-ranges ...`
 * against the in-process kube-apiserver STAND-IN (no real API server runs here), and as
 * `registrar project --cluster-ranges ...`.
 */
const SERVICE_RANGE = '10.96.0.0/12';
const POD_RANGE = '192.168.0.0/16';
const API_SERVICE_IP = '10.96.0.1';
const POD_IP = '192.168.7.9';

let api: KubeApiServerStandIn;
let bed: AgentTestbed;
let dir: string;
let kubeconfig: string;
const clients: TestClient[] = [];

beforeAll(async () => {
  api = await startKubeApiServerStandIn();
  dir = await mkdtemp(join(tmpdir(), 'projection-ranges-'));
  kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, api.kubeconfig);
  const parsed = parseLocalOptions(
    [
      '--kubeconfig',
      kubeconfig,
      '--projection-targets',
      'istio,endpointslices',
      '--projection-interval',
      '100ms',
      '--cluster-ranges',
      `${SERVICE_RANGE},${POD_RANGE}`,
    ],
    {},
  );
  if (parsed.kind !== 'run') throw new Error('expected runtime options');
  const runtime = await startLocalRuntime({
    ...parsed.options,
    port: 0,
    memory: true,
    sweepIntervalMs: 3_600_000,
    logLevel: 'SILENT',
    functionEnv: { REGISTRAR_NAMESPACE_SETTINGS_CACHE: '1ms' },
  });
  bed = await testbedFor(runtime);
  await bed.applyGroup('web');
  api.put('Service', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop' },
    spec: {
      type: 'ClusterIP',
      clusterIP: '10.96.10.10',
      selector: { app: 'web' },
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
    },
  } as never);
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
});
afterAll(async () => {
  await bed?.close();
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

async function register(ip: string): Promise<void> {
  clients.push(
    await openClient(`${bed.runtime.url}?group=web&namespace=shop&ip=${ip}`, {
      Authorization: `Bearer ${bed.token}`,
    }),
  );
}

/** `registrar project` as an operator runs it against this cluster. */
function project() {
  return bed.cli([
    'project',
    '--kubeconfig',
    kubeconfig,
    '--targets',
    'istio,endpointslices',
    '--cluster-ranges',
    `${SERVICE_RANGE},${POD_RANGE}`,
  ]);
}

function sliceAddresses(): string[] {
  return (api.objects('EndpointSlice') as EndpointSliceObject[])
    .filter((slice) => slice.metadata.namespace === 'shop')
    .flatMap((slice) => slice.endpoints.flatMap((endpoint) => endpoint.addresses));
}

describe('the projector never writes an endpoint in the cluster’s own ranges', () => {
  it("refuses the API Service's IP and another namespace's pod IP, and projects the VM next to them", async () => {
    await register(API_SERVICE_IP);
    await register(POD_IP);
    await register('10.0.0.8');

    await eventually(() => sliceAddresses().includes('10.0.0.8') || undefined, 10_000);
    await eventually(() => api.object('WorkloadEntry', 'shop', 'web-10.0.0.8'), 10_000);

    expect(sliceAddresses()).not.toContain(API_SERVICE_IP);
    expect(sliceAddresses()).not.toContain(POD_IP);
    expect(api.object('WorkloadEntry', 'shop', `web-${API_SERVICE_IP}`)).toBeUndefined();
    expect(api.object('WorkloadEntry', 'shop', `web-${POD_IP}`)).toBeUndefined();
  });

  it('names each refused address in `registrar project`, and writes none of them', async () => {
    await register(API_SERVICE_IP);
    await register('10.0.0.8');

    const run = await project();

    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `refused shop/web-${API_SERVICE_IP}: address ${API_SERVICE_IP} is in the cluster's range ${SERVICE_RANGE} (pods or Services): an entry must not stand in for them`,
    );
    expect(run.stdout).toContain(
      `refused shop/web-${POD_IP}: address ${POD_IP} is in the cluster's range ${POD_RANGE} (pods or Services): an entry must not stand in for them`,
    );
    expect(sliceAddresses()).not.toContain(API_SERVICE_IP);
  });

  it("takes out an endpoint written before its namespace's ranges were set", async () => {
    await register('10.50.0.1');
    await eventually(() => sliceAddresses().includes('10.50.0.1') || undefined, 10_000);
    await eventually(() => api.object('WorkloadEntry', 'shop', 'web-10.50.0.1'), 10_000);

    expect(
      (await bed.cli(['namespace', 'set', '-n', 'shop', '--address-ranges', '10.0.0.0/16'])).code,
    ).toBe(0);

    await eventually(
      () =>
        (!sliceAddresses().includes('10.50.0.1') &&
          api.object('WorkloadEntry', 'shop', 'web-10.50.0.1') === undefined) ||
        undefined,
      10_000,
    );
    expect(sliceAddresses()).toContain('10.0.0.8');
    expect((await bed.cli(['namespace', 'reset', '-n', 'shop'])).code).toBe(0);
  });
});

describe("a group's address ranges, narrowed after its VMs registered", () => {
  it('takes their endpoints out of every target, keeps the ones inside, and names them in registrar project', async () => {
    await register('10.0.0.8');
    await register('10.60.0.1');
    await eventually(() => sliceAddresses().includes('10.60.0.1') || undefined, 10_000);
    await eventually(() => api.object('WorkloadEntry', 'shop', 'web-10.60.0.1'), 10_000);

    // The operator narrows the group (as `registrar apply` of the annotated group does).
    const narrowed = (ranges: string | undefined) =>
      bed.registry.applyGroup({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: {
          name: 'web',
          namespace: 'shop',
          ...(ranges ? { annotations: { 'workload-registrar/address-ranges': ranges } } : {}),
        },
        spec: { metadata: { labels: { app: 'web' } }, template: { ports: { http: 8080 } } },
      });
    await narrowed('10.0.0.0/24');
    try {
      await eventually(
        () =>
          (!sliceAddresses().includes('10.60.0.1') &&
            api.object('WorkloadEntry', 'shop', 'web-10.60.0.1') === undefined) ||
          undefined,
        10_000,
      );
      expect(sliceAddresses()).toContain('10.0.0.8');
      expect(api.object('WorkloadEntry', 'shop', 'web-10.0.0.8')).toBeDefined();

      const run = await project();
      expect(run.stdout).toContain(
        'refused shop/web-10.60.0.1: address 10.60.0.1 is outside the address ranges of WorkloadGroup shop/web (10.0.0.0/24)',
      );
    } finally {
      await narrowed(undefined);
    }
    // Widened again: the endpoint comes back (its VM never left).
    await eventually(() => sliceAddresses().includes('10.60.0.1') || undefined, 10_000);
  });
});

describe('--cluster-ranges', () => {
  it('refuses a value that is not a list of CIDRs, naming the option and the item', () => {
    expect(() => parseLocalOptions(['--cluster-ranges', '10.96.0.0/12,10.244.0.1/16'], {})).toThrow(
      new OptionsError(
        "invalid --cluster-ranges '10.96.0.0/12,10.244.0.1/16': '10.244.0.1/16' has host bits set; did you mean 10.244.0.0/16?; give the cluster's pod and Service ranges as comma-separated CIDRs",
      ),
    );
  });
});
