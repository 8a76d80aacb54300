import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../infra/constructs/bundling.ts';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { createDynamoDbClient } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { bundleFunction } from './bundle-size.ts';
import type { RunnerReply } from './handler-heap-runner.ts';
import { heapSlopePer1000, sustainedHeapSlopePer1000 } from './heap-slope.ts';
import {
  API,
  Fleet,
  HEAP_FUNCTIONS,
  type HeapFunction,
  type Workload,
  workloadOf,
} from './heap-workloads.ts';
import { type ManagementApiStandIn, startManagementApiStandIn } from './management-api-stand-in.ts';

/**
 * Issue 38: every Lambda function's heap stays flat across thousands of warm invocations.
 * Each function's bundle, built as the CDK construct builds it (bench/bundle-size.ts), runs in
 * a process of its own (bench/handler-heap-runner.ts: one warm container) and is invoked in
 * batches with the events API Gateway, EventBridge or the schedule hand it. After each batch
 * the runner reads its heap after a full GC. This process holds what the function talks to and
 * what prepares its events, so none of it is counted: dynalite (the table, in this process),
 * the management API (bench/management-api-stand-in.ts, in a process of its own: liveness
 * checks and closes go to it over HTTP, as to API Gateway), and the source `$connect` and
 * `$disconnect` handlers that give `$disconnect`, messages and the sweeper the connections an
 * agent would have made.
 *
 * The verdict is the slope of the heap over the batches after the warm-up (Theil-Sen,
 * bench/heap-slope.ts), in bytes per 1,000 invocations: a function that keeps anything per
 * event, connection or namespace grows at a steady rate; one that only fills its caches and
 * pools grows in the warm-up and then stays flat.
 */

export { HEAP_FUNCTIONS, type HeapFunction } from './heap-workloads.ts';

/**
 * V8 without its compilers (bytecode only). As Lambda runs them, the functions' heaps grow for
 * thousands of invocations while V8 compiles hot functions: the authorizer's grew 1.1 MB from
 * its 1,667th invocation to its 8,333rd (0.64 MB compiled code and its metadata, 0.46 MB in the
 * old space, which a heap snapshot shows as code-related lists and feedback, no object of the
 * function's), then 13 KB / 1,000 up to 20,000 (2026-11-28). That growth is bounded by the code
 * there is, but it would hide a leak of a hundred bytes an invocation for as long. Without the
 * compilers the heap after a GC counts what the function's objects keep, and such a leak shows
 * within a few thousand invocations; what an object keeps alive does not depend on the tier
 * that runs the code.
 */
export const INTERPRETER_ONLY: readonly string[] = ['--no-opt', '--no-maglev', '--no-sparkplug'];

export interface HeapCheckpoint {
  invocations: number;
  /** V8 heap in use after a full GC (bytes). */
  heapUsed: number;
  /** Of which compiled code and its metadata (grows as functions tier up; V8 bounds it). */
  code: number;
  /** Buffers and ArrayBuffers outside the heap (bytes): reported, not judged (sockets vary). */
  external: number;
}

export interface HandlerHeap {
  name: HeapFunction;
  invocations: number;
  /** Invocations before the first checkpoint the slope counts. */
  warmup: number;
  /** The heap right after import (no invocation yet), then after each batch. */
  imported: HeapCheckpoint;
  checkpoints: HeapCheckpoint[];
  /** Theil-Sen slope of heapUsed over the checkpoints after the warm-up, bytes / 1,000 invocations. */
  slopePer1000: number;
  /** The smaller of the two halves' slopes (heap-slope.ts): growth that lasts, not a step. */
  sustainedSlopePer1000: number;
  /** The same without compiled code (heapUsed - code): what the function's objects add. */
  objectSlopePer1000: number;
  /** Invocations answered as the workload expects (Allow, 200, a summary; mesh identity: its refusal). */
  accepted: number;
  firstUnexpected?: string;
  /** Wall time of the invocations (ms), preparation and GCs left out. */
  invokeMs: number;
}

export interface HeapOptions {
  functions?: readonly HeapFunction[];
  /** Invocations per function: one number, or per function (default 3,000; the sweeper 600). */
  invocations?: number | Partial<Record<HeapFunction, number>>;
  /** Batches (a checkpoint after each); default 12. */
  batches?: number;
  /** Of which the first ones are warm-up, left out of the slope; default a quarter. */
  warmupBatches?: number;
  /** Built bundles (`<dir>/<name>/index.mjs`); default: built here, into a temporary directory. */
  bundleDir?: string;
  /**
   * V8 flags of the runner; none (as Lambda runs) by default. INTERPRETER_ONLY keeps compiled
   * code out of the readings.
   */
  v8Flags?: readonly string[];
  /** Mesh identity: every ask from a new connection (the message budget's bound). */
  sidecarChurn?: boolean;
  /** Called after each checkpoint (the bench prints as it goes). */
  onCheckpoint?: (name: HeapFunction, checkpoint: HeapCheckpoint) => void;
}

/** Each function's timeout, about as the stack sets it: the sweeper and the rollout plan by it. */
const TIMEOUT_MS: Record<HeapFunction, number> = {
  authorize: 10_000,
  connect: 10_000,
  disconnect: 10_000,
  message: 10_000,
  sweeper: 50_000,
  ec2StateChange: 10_000,
  rollout: 150_000,
  meshIdentity: 10_000,
};
const DEFAULT_INVOCATIONS: Record<HeapFunction, number> = {
  authorize: 3_000,
  connect: 3_000,
  disconnect: 3_000,
  message: 3_000,
  sweeper: 600,
  ec2StateChange: 3_000,
  rollout: 1_000,
  meshIdentity: 3_000,
};

export async function measureHandlerHeap(options: HeapOptions = {}): Promise<HandlerHeap[]> {
  const names = options.functions ?? HEAP_FUNCTIONS;
  const batches = options.batches ?? 12;
  const warmupBatches = options.warmupBatches ?? Math.max(1, Math.floor(batches / 4));
  const built = options.bundleDir ?? (await mkdtemp(join(tmpdir(), 'handler-heap-')));
  const dynamo = await startDynalite();
  let management: ManagementApiStandIn | undefined;
  try {
    management = await startManagementApiStandIn(0);
    const results: HandlerHeap[] = [];
    for (const name of names) {
      if (options.bundleDir === undefined) {
        await bundleFunction(name, { outdir: join(built, name) });
      }
      const total =
        typeof options.invocations === 'number'
          ? options.invocations
          : (options.invocations?.[name] ?? DEFAULT_INVOCATIONS[name]);
      const env = functionEnv(dynamo.endpoint, management.url, `heap-${name}`);
      const raw = createDynamoDbClient({ region: API.region, endpoint: dynamo.endpoint });
      await ensureTable(raw, env.REGISTRAR_TABLE).finally(() => raw.destroy());
      const fleet = await Fleet.seed(env, management, name === 'rollout');
      results.push(
        await measureOne(
          name,
          join(built, name, 'index.mjs'),
          env,
          workloadOf(name, fleet, total, options.sidecarChurn === true),
          {
            total,
            batches,
            warmupBatches,
            v8Flags: options.v8Flags ?? [],
            ...(options.onCheckpoint ? { onCheckpoint: options.onCheckpoint } : {}),
          },
        ),
      );
    }
    return results;
  } finally {
    await management?.close();
    await dynamo.close();
    if (options.bundleDir === undefined) await rm(built, { recursive: true, force: true });
  }
}

async function measureOne(
  name: HeapFunction,
  bundle: string,
  env: Record<string, string>,
  workload: Workload,
  plan: {
    total: number;
    batches: number;
    warmupBatches: number;
    v8Flags: readonly string[];
    onCheckpoint?: (name: HeapFunction, checkpoint: HeapCheckpoint) => void;
  },
): Promise<HandlerHeap> {
  const runner = await startRunner(bundle, name, env, plan.v8Flags);
  try {
    await workload.setup?.();
    const checkpoints: HeapCheckpoint[] = [];
    let invocations = 0;
    let accepted = 0;
    let invokeMs = 0;
    let firstUnexpected: string | undefined;
    for (let batch = 0; batch < plan.batches; batch++) {
      const size =
        Math.floor((plan.total * (batch + 1)) / plan.batches) -
        Math.floor((plan.total * batch) / plan.batches);
      const events = await workload.batch(size);
      const reply = await runner.run(batch, events, workload.expectRefusal === true);
      await workload.after?.();
      invocations += reply.invoked;
      accepted += reply.accepted;
      invokeMs += reply.ms;
      firstUnexpected ??= reply.firstUnexpected;
      const checkpoint = {
        invocations,
        heapUsed: reply.heapUsed,
        code: reply.code,
        external: reply.external,
      };
      checkpoints.push(checkpoint);
      plan.onCheckpoint?.(name, checkpoint);
    }
    const counted = checkpoints.slice(plan.warmupBatches - 1);
    return {
      name,
      invocations,
      warmup: counted[0]?.invocations ?? 0,
      imported: runner.imported,
      checkpoints,
      slopePer1000: heapSlopePer1000(
        counted.map((c) => ({ invocations: c.invocations, bytes: c.heapUsed })),
      ),
      sustainedSlopePer1000: sustainedHeapSlopePer1000(
        counted.map((c) => ({ invocations: c.invocations, bytes: c.heapUsed })),
      ),
      objectSlopePer1000: heapSlopePer1000(
        counted.map((c) => ({ invocations: c.invocations, bytes: c.heapUsed - c.code })),
      ),
      accepted,
      ...(firstUnexpected === undefined ? {} : { firstUnexpected }),
      invokeMs,
    };
  } finally {
    await runner.close();
  }
}

interface Runner {
  imported: HeapCheckpoint;
  run(batch: number, events: unknown[], expectRefusal: boolean): Promise<RunnerReply>;
  close(): Promise<void>;
}

/** One warm container: the runner process with the bundle imported. */
async function startRunner(
  bundle: string,
  name: HeapFunction,
  env: Record<string, string>,
  v8Flags: readonly string[],
): Promise<Runner> {
  const child: ChildProcess = fork(
    join(REPO_ROOT, 'bench/handler-heap-runner.ts'),
    [bundle, `registrar-${name}`, String(TIMEOUT_MS[name])],
    {
      execArgv: ['--expose-gc', ...v8Flags],
      // Lambda's environment and nothing of this process's (no NODE_OPTIONS, no test settings).
      env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: '', ...env },
      // The function's JSON logs and EMF metrics are written as on Lambda, to nowhere.
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) =>
      reject(new Error(`the ${name} runner exited (${code ?? signal}): ${stderr}`)),
    ),
  );
  exited.catch(() => undefined);
  const next = <T>() =>
    Promise.race([
      new Promise<T>((resolve) => child.once('message', (m) => resolve(m as T))),
      exited,
    ]);
  const ready = await next<Omit<HeapCheckpoint, 'invocations'>>();
  return {
    imported: { invocations: 0, ...ready },
    async run(batch, events, expectRefusal) {
      const replied = next<RunnerReply>();
      child.send({ batch, events, expectRefusal });
      return replied;
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.disconnect();
      }),
  };
}

/** What the stack gives a function, pointed at dynalite and the management API stand-in. */
function functionEnv(endpoint: string, connectionsUrl: string, table: string) {
  return {
    REGISTRAR_TABLE: table,
    REGISTRAR_DYNAMODB_ENDPOINT: endpoint,
    REGISTRAR_CONNECTIONS_URL: connectionsUrl,
    // Liveness checks every 30 s, so a run of a minute checks each holder more than once; each
    // sweep reads the index once per interval of the 1.5 x 4 min stale window: 12 Queries.
    REGISTRAR_SWEEP_INTERVAL: '10s',
    REGISTRAR_LIVENESS_INTERVAL: '30s',
    REGISTRAR_MAX_CONNECTION_AGE: '4m',
    REGISTRAR_SWEEP_DELETES_PER_SECOND: '1000',
    AWS_REGION: API.region,
    AWS_ACCESS_KEY_ID: 'heap',
    AWS_SECRET_ACCESS_KEY: 'heap',
    AWS_LAMBDA_FUNCTION_NAME: 'registrar',
    POWERTOOLS_SERVICE_NAME: 'workload-registrar',
    POWERTOOLS_METRICS_NAMESPACE: 'WorkloadRegistrar',
    POWERTOOLS_METRICS_DISABLED: 'false',
    POWERTOOLS_LOG_LEVEL: 'INFO',
  };
}
