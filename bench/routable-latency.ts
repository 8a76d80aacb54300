import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { type LocalRuntime, startLocalRuntime } from '../infra/local/runtime.ts';
import { createJoinToken } from '../lib/auth/join-token.ts';
import type { WorkloadEntry } from '../lib/domain/model.ts';
import { createKubernetesCluster } from '../lib/projection/kubernetes-cluster.ts';
import { reconcile } from '../lib/projection/projector.ts';
import { servingState } from '../lib/projection/serving.ts';
import { scopeOfStream } from '../lib/projection/stream-scope.ts';
import { createDocumentClient } from '../lib/store/dynamodb-client.ts';
import { DynamoDbRegistryStore } from '../lib/store/dynamodb-registry-store.ts';
import { DynamoDbTokenStore } from '../lib/store/dynamodb-token-store.ts';
import { istiodRoutesTo } from '../test/fixtures/istio-routing-rule.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../test/fixtures/kube-apiserver-stand-in.ts';
import { openClient } from '../test/fixtures/websocket-client.ts';

/**
 * Time from a VM's crash (its TCP connection ends without a close frame) to "the mesh sends it
 * nothing", per target, with real WebSocket clients against the local runtime and the
 * projector writing into the in-process kube-apiserver STAND-IN through
 * @kubernetes/client-node. Each VM crashes alone, at a random point of the projector's cycle,
 * and is watched until:
 * - registry: `get we` calls it not routable (servingState over the stored record);
 * - istio: istiod's own rule over the projected WorkloadEntry says not routable;
 * - endpointslices: no ready endpoint of its address is left in the namespace's slices.
 * Two projector paths:
 * - loop: the local runtime's full reconcile every `intervalMs` (dynalite has no streams);
 * - stream: the deployed projector's fast path, a reconcile scoped to the changed entry as a
 *   DynamoDB stream record names it, run as soon as the registry shows the disconnect. On AWS
 *   the stream's own delivery and the event source's 2 s batching window come on top (not
 *   measurable here).
 */
export interface RoutableLatency {
  vms: number;
  intervalMs: number;
  rows: { path: string; target: string; p50Ms: number; p99Ms: number; maxMs: number }[];
}

const NS = 'shop';

export async function measureRoutableLatency(
  vms = 40,
  intervalMs = 1000,
): Promise<RoutableLatency> {
  const loop = await crashes('loop', vms, intervalMs);
  const stream = await crashes('stream', vms, intervalMs);
  // The second way: each VM's client is a process of its own, and the crash is its SIGKILL
  // (the kernel ends the TCP connection), through the stream path.
  const killed = await crashes('stream', Math.min(vms, 20), intervalMs, 'sigkill');
  return { vms, intervalMs, rows: [...loop, ...stream, ...killed] };
}

/** A VM's connection: closed by the client itself, or by killing the process that holds it. */
interface Vm {
  crash(): void;
  close(): void;
}

async function inProcessVm(url: string, token: string): Promise<Vm> {
  const client = await openClient(url, { Authorization: `Bearer ${token}` });
  return { crash: () => client.socket.terminate(), close: () => client.socket.terminate() };
}

/** A client in a process of its own (the project's ws), which says "open" once connected. */
const CLIENT_SCRIPT = [
  "const WebSocket = require('ws');",
  "const socket = new WebSocket(process.argv[1], { headers: { Authorization: 'Bearer ' + process.argv[2] } });",
  "socket.on('open', () => process.stdout.write('open\\n'));",
  "socket.on('unexpected-response', () => process.exit(3));",
  "socket.on('error', () => process.exit(4));",
].join('\n');

async function processVm(url: string, token: string): Promise<Vm> {
  const child = spawn(process.execPath, ['-e', CLIENT_SCRIPT, url, token], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the client process exited with ${code}`)));
  });
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  return { crash: kill, close: kill };
}

async function crashes(
  path: 'loop' | 'stream',
  vms: number,
  intervalMs: number,
  crash: 'terminate' | 'sigkill' = 'terminate',
): Promise<RoutableLatency['rows']> {
  const api = await startKubeApiServerStandIn();
  const dir = await mkdtemp(join(tmpdir(), 'bench-routable-'));
  const clients: Vm[] = [];
  let runtime: LocalRuntime | undefined;
  try {
    await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
    api.put('Service', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NS },
      spec: {
        selector: { app: 'web' },
        clusterIP: '172.20.0.10',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      },
    });
    runtime = await startLocalRuntime({
      port: 0,
      memory: true,
      dataDir: dir,
      // The stream path runs its own scoped reconcile; the loop would race it.
      ...(path === 'loop' ? { kubeconfig: join(dir, 'kubeconfig') } : {}),
      projectionTargets: ['istio', 'endpointslices'],
      projectionIntervalMs: intervalMs,
      gracePeriodMs: 30 * 60_000,
      logLevel: 'ERROR',
    });
    const client = createDocumentClient({
      region: 'us-east-1',
      endpoint: runtime.dynamoDbEndpoint,
    });
    const store = new DynamoDbRegistryStore(client, runtime.tableName);
    await store.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: NS },
      spec: { metadata: { labels: { app: 'web' } }, template: { ports: { http: 8080 } } },
    });
    const created = createJoinToken({ namespace: NS, ttlMs: 60 * 60_000, now: Date.now() });
    await new DynamoDbTokenStore(client, runtime.tableName).putToken(created.stored);
    const config = new KubeConfig();
    config.loadFromString(api.kubeconfig);
    const cluster = createKubernetesCluster(config);
    const projectAll = () =>
      reconcile({ store, cluster }, { targets: ['istio', 'endpointslices'], clusterRanges: [] });

    const addresses = Array.from({ length: vms }, (_, i) => `10.1.${i >> 8}.${(i & 255) + 1}`);
    for (const ip of addresses) {
      const url = `${runtime.url}?group=web&namespace=${NS}&ip=${ip}`;
      clients.push(
        crash === 'sigkill'
          ? await processVm(url, created.token)
          : await inProcessVm(url, created.token),
      );
    }
    if (path === 'stream') await projectAll();
    const name = (ip: string) => `web-${ip}`;
    await until(() => addresses.every((ip) => routableInIstio(api, name(ip)) === true), 60_000);

    const samples = { registry: [] as number[], istio: [] as number[], slices: [] as number[] };
    for (const [i, ip] of addresses.entries()) {
      // A random point of the projector's cycle, so the loop's wait is sampled fairly.
      await sleep(Math.random() * intervalMs);
      const crashedAt = performance.now();
      clients[i]?.crash();
      const ref = { namespace: NS, name: name(ip) };
      let registryMs: number | undefined;
      let istioMs: number | undefined;
      let slicesMs: number | undefined;
      let streamRun: Promise<unknown> | undefined;
      await until(async () => {
        const now = () => performance.now() - crashedAt;
        if (registryMs === undefined) {
          const record = await store.getEntry(ref);
          if (record && !servingState(record).ready) {
            registryMs = now();
            if (path === 'stream') {
              const records = [
                { dynamodb: { Keys: { pk: { S: `NS#${NS}` }, sk: { S: `WE#${ref.name}` } } } },
              ];
              streamRun = reconcile(
                { store, cluster },
                { targets: ['istio', 'endpointslices'], clusterRanges: [] },
                scopeOfStream(records),
              );
            }
          }
        }
        if (istioMs === undefined && routableInIstio(api, ref.name) === false) istioMs = now();
        if (slicesMs === undefined && !readyInSlices(api, ip)) slicesMs = now();
        return registryMs !== undefined && istioMs !== undefined && slicesMs !== undefined;
      }, 60_000);
      await streamRun;
      samples.registry.push(registryMs ?? Number.NaN);
      samples.istio.push(istioMs ?? Number.NaN);
      samples.slices.push(slicesMs ?? Number.NaN);
    }
    client.destroy();
    const label = crash === 'sigkill' ? `${path}, client process killed` : path;
    return [
      row(label, 'registry (get we)', samples.registry),
      row(label, 'istio WorkloadEntry', samples.istio),
      row(label, 'EndpointSlice', samples.slices),
    ];
  } finally {
    for (const c of clients) c.close();
    await runtime?.close();
    await api.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function routableInIstio(api: KubeApiServerStandIn, name: string): boolean | undefined {
  const entry = api.object('WorkloadEntry', NS, name);
  return entry === undefined ? undefined : istiodRoutesTo(entry as unknown as WorkloadEntry);
}

function readyInSlices(api: KubeApiServerStandIn, ip: string): boolean {
  return api.objects('EndpointSlice').some((slice) => {
    const endpoints =
      (
        slice as unknown as {
          endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[];
        }
      ).endpoints ?? [];
    return endpoints.some((e) => e.addresses.includes(ip) && e.conditions?.ready !== false);
  });
}

function row(path: string, target: string, ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
  return {
    path,
    target,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('routable bench: a condition was not met in time');
    await sleep(5);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
