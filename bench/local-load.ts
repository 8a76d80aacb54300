import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { createJoinToken } from '../lib/auth/join-token.ts';
import { createDocumentClient } from '../lib/store/dynamodb-client.ts';
import { DynamoDbRegistryStore } from '../lib/store/dynamodb-registry-store.ts';
import { DynamoDbTokenStore } from '../lib/store/dynamodb-token-store.ts';

export interface LocalLoad {
  agents: number;
  registered: number;
  refused: number;
  wallMs: number;
  registrationsPerSecond: number;
  connectP50Ms: number;
  connectP99Ms: number;
  rssIdleMb: number;
  rssWithConnectionsMb: number;
}

interface LocalJson {
  url: string;
  dynamoDbEndpoint: string;
  tableName: string;
  region?: string;
}

/**
 * `agents` real WebSocket clients connect at once to the local runtime (started as a child
 * process, exactly as `npm start` runs it), each registering its own VM. Latency is from the
 * client's open call to the upgrade's 101 (the authorizer and $connect ran); RSS is the runtime
 * process's, read from /proc while it holds every connection.
 */
export async function measureLocalLoad(agents = 1000): Promise<LocalLoad> {
  const dataDir = mkdtempSync(join(tmpdir(), 'registrar-bench-'));
  const runtime = spawn(
    process.execPath,
    ['infra/local/main.ts', '--memory', '--port', '0', '--data-dir', dataDir],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, LOG_LEVEL: 'ERROR' } },
  );
  const sockets: WebSocket[] = [];
  try {
    const local = await waitForLocalJson(join(dataDir, 'local.json'), runtime);
    const client = createDocumentClient({
      region: local.region ?? 'us-east-1',
      endpoint: local.dynamoDbEndpoint,
    });
    const store = new DynamoDbRegistryStore(client, local.tableName);
    await store.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'load', namespace: 'bench' },
      spec: { template: { ports: { http: 8080 }, serviceAccount: 'load' } },
    });
    const { token, stored } = createJoinToken({
      namespace: 'bench',
      serviceAccount: 'load',
      ttlMs: 3_600_000,
      now: Date.now(),
    });
    await new DynamoDbTokenStore(client, local.tableName).putToken(stored);
    const rssIdleMb = rssMb(runtime);

    const latencies: number[] = [];
    let refused = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: agents }, (_, i) => {
        const ip = `10.1.${(i >> 8) & 255}.${i & 255}`;
        const opened = performance.now();
        const socket = new WebSocket(`${local.url}?group=load&namespace=bench&ip=${ip}`, {
          headers: { Authorization: `Bearer ${token}` },
        });
        sockets.push(socket);
        return new Promise<void>((resolve) => {
          socket.once('open', () => {
            latencies.push(performance.now() - opened);
            resolve();
          });
          socket.once('unexpected-response', () => {
            refused += 1;
            resolve();
          });
          socket.once('error', () => {
            refused += 1;
            resolve();
          });
        });
      }),
    );
    const wallMs = performance.now() - started;
    const rssWithConnectionsMb = rssMb(runtime);
    const registered = (await store.listEntries('bench')).length;
    client.destroy();
    latencies.sort((a, b) => a - b);
    return {
      agents,
      registered,
      refused,
      wallMs,
      registrationsPerSecond: (latencies.length / wallMs) * 1000,
      connectP50Ms: percentile(latencies, 0.5),
      connectP99Ms: percentile(latencies, 0.99),
      rssIdleMb,
      rssWithConnectionsMb,
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    runtime.kill('SIGTERM');
    await new Promise((resolve) => runtime.once('exit', resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function waitForLocalJson(path: string, runtime: ChildProcess): Promise<LocalJson> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (runtime.exitCode !== null) throw new Error(`local runtime exited with ${runtime.exitCode}`);
    if (existsSync(path)) {
      try {
        return JSON.parse(readFileSync(path, 'utf8')) as LocalJson;
      } catch {
        // Written but not complete yet: read again.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`local runtime did not write ${path} within 30 s`);
}

function rssMb(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
}
