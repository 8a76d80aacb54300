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
import { DynamoDbTokenStore } from '../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import {
  type AgentCommand,
  type AgentProcess,
  type RestartSample,
  restartAgent,
  spawnAgent,
  stopAllAgents,
} from '../test/fixtures/agent-restart.ts';
import { startTcpTarget } from '../test/fixtures/agent-targets.ts';
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
    const store = composeRegistry(client, runtime.tableName);
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

/**
 * A planned restart of the real agent (`systemctl restart`: SIGTERM, the agent drains and
 * closes with 1000, exits; a new process of the same command starts and connects), run from
 * its sources under this Node against the local runtime, the projector's loop writing into the
 * kube-apiserver STAND-IN every `intervalMs`. The projected WorkloadEntry is sampled every
 * 2 ms and judged with istiod's rule: how long the mesh sent the VM nothing, and whether the
 * entry stayed the same object (uid) throughout. Per group kind (a TCP probe on a local port,
 * period 1 s; no probe) and drain delay (the agent's default 10 s; 0, its opt-out).
 */
export interface RestartRow {
  group: string;
  drainDelay: string;
  restarts: number;
  /** SIGTERM to the old process's exit (the drain delay, then a clean close). */
  exitP50Ms: number;
  /** SIGTERM to the new process's "registered" log line. */
  registeredP50Ms: number;
  unroutableP50Ms: number;
  unroutableMaxMs: number;
  /** SIGTERM to routable again. */
  routableAgainP50Ms: number;
  routableAgainMaxMs: number;
  uidKept: boolean;
  maxSampleGapMs: number;
}

export async function measureRestartUnroutable(
  restarts = 5,
  intervalMs = 100,
): Promise<RestartRow[]> {
  const api = await startKubeApiServerStandIn();
  const dir = await mkdtemp(join(tmpdir(), 'bench-restart-'));
  const probeTarget = await startTcpTarget();
  let runtime: LocalRuntime | undefined;
  try {
    await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
    runtime = await startLocalRuntime({
      port: 0,
      memory: true,
      dataDir: dir,
      kubeconfig: join(dir, 'kubeconfig'),
      projectionIntervalMs: intervalMs,
      sweepIntervalMs: 3_600_000,
      gracePeriodMs: 3_600_000,
      logLevel: 'ERROR',
      functionEnv: { REGISTRAR_GROUP_CACHE_TTL: '0s' },
    });
    const client = createDocumentClient({
      region: 'us-east-1',
      endpoint: runtime.dynamoDbEndpoint,
    });
    const store = composeRegistry(client, runtime.tableName);
    const group = (name: string, probe: boolean) =>
      store.applyGroup({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: { name, namespace: NS },
        spec: {
          metadata: { labels: { app: name } },
          template: { ports: { http: 8080 } },
          ...(probe
            ? {
                probe: {
                  tcpSocket: { port: probeTarget.port, host: '127.0.0.1' },
                  periodSeconds: 1,
                  successThreshold: 1,
                  failureThreshold: 1,
                },
              }
            : {}),
        },
      });
    await group('probed', true);
    await group('plain', false);
    const created = createJoinToken({ namespace: NS, ttlMs: 60 * 60_000, now: Date.now() });
    await new DynamoDbTokenStore(client, runtime.tableName).putToken(created.stored);
    const rows: RestartRow[] = [];
    const cases = [
      { group: 'probed', label: 'TCP probe, period 1 s', drainDelay: '10s' },
      { group: 'plain', label: 'no probe', drainDelay: '10s' },
      { group: 'probed', label: 'TCP probe, period 1 s', drainDelay: '0s' },
      { group: 'plain', label: 'no probe', drainDelay: '0s' },
    ];
    for (const [i, c] of cases.entries()) {
      const ip = `10.2.0.${i + 1}`;
      const name = `${c.group}-${ip}`;
      const command: AgentCommand = {
        url: runtime.url,
        token: created.token,
        group: c.group,
        namespace: NS,
        ip,
        drainDelay: c.drainDelay,
      };
      const projected = () =>
        api.object('WorkloadEntry', NS, name) as unknown as WorkloadEntry | undefined;
      let agent: AgentProcess = spawnAgent(command);
      await until(() => {
        const entry = projected();
        return entry !== undefined && istiodRoutesTo(entry);
      }, 60_000);
      const samples: RestartSample[] = [];
      for (let n = 0; n < restarts; n += 1) {
        const { sample, next } = await restartAgent({
          command,
          current: agent,
          projected,
          timeoutMs: 60_000,
        });
        samples.push(sample);
        agent = next;
      }
      agent.child.kill('SIGTERM');
      await agent.exited;
      const p50 = (pick: (s: RestartSample) => number) => row('', '', samples.map(pick)).p50Ms;
      const max = (pick: (s: RestartSample) => number) => row('', '', samples.map(pick)).maxMs;
      rows.push({
        group: c.label,
        drainDelay: c.drainDelay,
        restarts: samples.length,
        exitP50Ms: p50((s) => s.exitedMs),
        registeredP50Ms: p50((s) => s.registeredMs),
        unroutableP50Ms: p50((s) => s.unroutableMs),
        unroutableMaxMs: max((s) => s.unroutableMs),
        routableAgainP50Ms: p50((s) => s.routableAgainMs),
        routableAgainMaxMs: max((s) => s.routableAgainMs),
        uidKept: samples.every((s) => s.uidKept),
        maxSampleGapMs: max((s) => s.maxSampleGapMs),
      });
    }
    client.destroy();
    return rows;
  } finally {
    await stopAllAgents();
    await runtime?.close();
    await api.close();
    await probeTarget.close();
    await rm(dir, { recursive: true, force: true });
  }
}
