import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';
import { createJoinToken } from '../lib/auth/join-token.ts';
import { createDocumentClient } from '../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { startKubeApiServerStandIn } from '../test/fixtures/kube-apiserver-stand-in.ts';
import { startCountingProxy } from './counting-proxy.ts';

export interface SidecarCost {
  asks: number;
  /** DynamoDB requests per ask, by operation, counted on the wire. */
  dynamoPerAsk: Record<string, number>;
  /** Kubernetes requests per ask (TokenRequest, ConfigMap reads), at the stand-in. */
  kubernetesPerAsk: Record<string, number>;
  /** Bytes of one reply (what API Gateway meters in 32 KB units). */
  replyBytes: number;
  /** Round trip of one ask through the local gateway, median and p95 (ms). */
  medianMs: number;
  p95Ms: number;
}

/**
 * What one `sidecar` ask costs the registrar: DynamoDB requests counted on the wire between
 * the local runtime and dynalite, Kubernetes requests at the kube-apiserver STAND-IN (no real
 * API server runs here: its latency is not an EKS API server's), the reply's size, and the
 * round trip through the real gateway and handler. docs/cost.md prices the refreshes from it.
 */
/** Asks per connection after its warm-up ask: within the route's 10 a minute. */
const ASKS_PER_CONNECTION = 8;

export async function measureSidecarCost(asks = 200): Promise<SidecarCost> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-sidecar-'));
  const dynamo = await startDynalite();
  const proxy = await startCountingProxy(dynamo.endpoint);
  const api = await startKubeApiServerStandIn();
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, api.kubeconfig);
  api.addServiceAccount('bench', 'web');
  api.putConfigMap('bench', 'istio-ca-root-cert', {
    'root-cert.pem': '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
  });
  const runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    dynamoDbEndpoint: proxy.endpoint,
    sweepIntervalMs: 3_600_000,
    writeLocalJson: false,
    logLevel: 'ERROR',
    kubeconfig,
    projectionIntervalMs: 3_600_000,
  });
  const client = createDocumentClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const sockets: WebSocket[] = [];
  try {
    await composeRegistry(client, runtime.tableName).applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'bench' },
      spec: { template: { ports: { http: 8080 }, serviceAccount: 'web' } },
    });
    const { token, stored } = createJoinToken({
      namespace: 'bench',
      serviceAccount: 'web',
      ttlMs: 3_600_000,
      now: Date.now(),
    });
    await new DynamoDbTokenStore(client, runtime.tableName).putToken(stored);
    // The sidecar route admits 10 asks a minute a connection (SIDECAR_MESSAGE_BUDGET): the
    // asks go round a VM per ASKS_PER_CONNECTION, each warmed with one ask of its own.
    for (let i = 0; i < Math.ceil(asks / ASKS_PER_CONNECTION); i += 1) {
      const socket = await open(`${runtime.url}?group=web&namespace=bench&ip=10.0.0.${i + 1}`, {
        Authorization: `Bearer ${token}`,
      });
      sockets.push(socket);
      await ask(socket); // warm: module loading, the root certificate cache
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    proxy.reset();
    api.resetRequests();
    const times: number[] = [];
    let replyBytes = 0;
    for (let i = 0; i < asks; i += 1) {
      const started = performance.now();
      replyBytes = await ask(sockets[i % sockets.length] as WebSocket);
      times.push(performance.now() - started);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    const kubernetes: Record<string, number> = {};
    for (const request of api.requests) {
      const what = `${request.method} ${request.path.split('/').slice(-2).join('/')}`;
      kubernetes[what] = (kubernetes[what] ?? 0) + 1;
    }
    times.sort((a, b) => a - b);
    return {
      asks,
      dynamoPerAsk: perAsk(proxy.counts(), asks),
      kubernetesPerAsk: perAsk(kubernetes, asks),
      replyBytes,
      medianMs: round(times[Math.floor(asks / 2)] ?? 0),
      p95Ms: round(times[Math.floor(asks * 0.95)] ?? 0),
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    client.destroy();
    await runtime.close();
    await api.close();
    await proxy.close();
    await dynamo.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function perAsk(counts: Record<string, number>, asks: number): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, round(v / asks)]));
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

function open(url: string, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Sends `sidecar` and resolves with the reply's size; fails on a refusal or a close. */
function ask(socket: WebSocket): Promise<number> {
  return new Promise((resolve, reject) => {
    const closed = (code: number) => reject(new Error(`sidecar ask: connection closed (${code})`));
    socket.once('close', closed);
    socket.once('message', (data) => {
      socket.off('close', closed);
      const text = String(data);
      const reply = JSON.parse(text) as { ok?: boolean };
      if (reply.ok) resolve(Buffer.byteLength(text));
      else reject(new Error(`sidecar refused: ${text}`));
    });
    socket.send(JSON.stringify({ action: 'sidecar' }));
  });
}
