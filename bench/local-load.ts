import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { createJoinToken } from '../lib/auth/join-token.ts';
import { createDocumentClient } from '../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';

/**
 * How the runtime runs. `npm-start` (the default) is what a user gets from `npm start`: the
 * registry in a data dir on disk (dynalite's LevelDB), one console line per event at info,
 * read by this process as a terminal would. `memory-quiet` is what this bench measured before
 * 2026-11-27: `--memory` (an in-memory store) and LOG_LEVEL=ERROR, about twice as fast and not
 * what anyone runs (issue 38).
 */
export type LoadRuntime = 'npm-start' | 'memory-quiet';

export interface LocalLoadOptions {
  agents?: number;
  /** Clients connecting at a time (each batch waits for the one before); default all at once. */
  atOnce?: number;
  runtime?: LoadRuntime;
}

export interface LocalLoad {
  runtime: LoadRuntime;
  atOnce: number;
  agents: number;
  registered: number;
  refused: number;
  wallMs: number;
  registrationsPerSecond: number;
  connectP50Ms: number;
  connectP99Ms: number;
  rssIdleMb: number;
  rssWithConnectionsMb: number;
  /**
   * CPU the runtime process used during the burst, in ms per registration: all its threads,
   * and its main thread alone (gateway, handlers, SDK). On a shared machine wall time varies
   * with the neighbours; CPU per registration does not, and 1,000 / main-thread ms is the rate
   * one free core could reach.
   */
  cpuMsPerRegistration: number;
  mainThreadCpuMsPerRegistration: number;
  /** The store's thread when dynalite runs in a worker (else a GC helper). */
  busiestOtherThreadCpuMsPerRegistration: number;
  /** The runtime's CPU during the burst / wall time: 1.0 is one core busy, 2.0 both. */
  coresUsed: number;
  /** This process's CPU (the 1,000 WebSocket clients) per registration: it shares the cores. */
  clientCpuMsPerRegistration: number;
}

interface LocalJson {
  url: string;
  dynamoDbEndpoint: string;
  tableName: string;
  region?: string;
}

/**
 * `agents` real WebSocket clients (the `ws` package, in this process) connect to the local
 * runtime, a process of its own started as `npm start` starts it, each registering its own
 * VM: all at once, or `atOnce` at a time. Nothing is cached between runs: a fresh runtime and
 * an empty registry each time. Latency is from the client's open call to the upgrade's 101
 * (the authorizer and $connect ran); RSS is the runtime process's, read from /proc while it
 * holds every connection.
 */
export async function measureLocalLoad(options: LocalLoadOptions = {}): Promise<LocalLoad> {
  const agents = options.agents ?? 1000;
  const atOnce = Math.min(agents, options.atOnce ?? agents);
  const mode = options.runtime ?? 'npm-start';
  const dataDir = mkdtempSync(join(tmpdir(), 'registrar-bench-'));
  const runtime = spawn(
    process.execPath,
    // As `npm start` runs it (package.json), with AsyncContextFrame where Node needs the flag.
    [
      '--import',
      './scripts/async-context-frame.js',
      'infra/local/main.ts',
      ...(mode === 'memory-quiet' ? ['--memory'] : []),
      '--port',
      '0',
      '--data-dir',
      dataDir,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, LOG_LEVEL: mode === 'memory-quiet' ? 'ERROR' : 'info' },
    },
  );
  // The console's lines are read as a terminal reads them: a runtime whose stdout nobody
  // drains would block on a full pipe.
  runtime.stdout?.resume();
  const sockets: WebSocket[] = [];
  try {
    const local = await waitForLocalJson(join(dataDir, 'local.json'), runtime);
    const client = createDocumentClient({
      region: local.region ?? 'us-east-1',
      endpoint: local.dynamoDbEndpoint,
    });
    const store = composeRegistry(client, local.tableName);
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
    const cpuBefore = threadCpuMs(runtime);
    const clientCpuBefore = process.cpuUsage();
    const started = performance.now();
    const connectOne = (i: number) => {
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
    };
    for (let first = 0; first < agents; first += atOnce) {
      const batch = Array.from({ length: Math.min(atOnce, agents - first) }, (_, i) => first + i);
      await Promise.all(batch.map(connectOne));
    }
    const wallMs = performance.now() - started;
    const cpu = cpuSplit(cpuBefore, threadCpuMs(runtime), String(runtime.pid));
    const clientCpu = process.cpuUsage(clientCpuBefore);
    const rssWithConnectionsMb = rssMb(runtime);
    const registered = (await store.listEntries('bench')).length;
    client.destroy();
    latencies.sort((a, b) => a - b);
    return {
      runtime: mode,
      atOnce,
      agents,
      registered,
      refused,
      wallMs,
      registrationsPerSecond: (latencies.length / wallMs) * 1000,
      connectP50Ms: percentile(latencies, 0.5),
      connectP99Ms: percentile(latencies, 0.99),
      rssIdleMb,
      rssWithConnectionsMb,
      cpuMsPerRegistration: cpu.total / latencies.length,
      mainThreadCpuMsPerRegistration: cpu.main / latencies.length,
      busiestOtherThreadCpuMsPerRegistration: cpu.busiestOther / latencies.length,
      coresUsed: cpu.total / wallMs,
      clientCpuMsPerRegistration: (clientCpu.user + clientCpu.system) / 1000 / latencies.length,
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

/** utime + stime of each of the process's threads in ms, by thread id, from /proc. */
function threadCpuMs(child: ChildProcess): Map<string, number> {
  const msPerTick = 1000 / 100; // USER_HZ
  const byThread = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${child.pid}/task`)) {
    try {
      // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/${child.pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.replace(/^.*\) /s, '').split(' ');
      byThread.set(tid, (Number(fields[11]) + Number(fields[12])) * msPerTick);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byThread;
}

/**
 * Where the runtime's CPU went between two readings: its main thread, its busiest other
 * thread (the store's worker thread when dynalite runs in one), and the rest (V8's GC helpers,
 * libuv's pool).
 */
function cpuSplit(
  before: Map<string, number>,
  after: Map<string, number>,
  mainTid: string,
): { total: number; main: number; busiestOther: number } {
  let total = 0;
  let main = 0;
  let busiestOther = 0;
  for (const [tid, ms] of after) {
    const used = ms - (before.get(tid) ?? 0);
    total += used;
    if (tid === mainTid) main = used;
    else busiestOther = Math.max(busiestOther, used);
  }
  return { total, main, busiestOther };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
}
