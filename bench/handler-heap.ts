import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnectHandler } from '../functions/connect.ts';
import { createDisconnectHandler } from '../functions/disconnect.ts';
import { REPO_ROOT } from '../infra/constructs/bundling.ts';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import {
  type AuthorizerContext,
  authorizerEvent,
  connectEvent,
  disconnectEvent,
  gatewayId,
  lambdaContext,
  messageEvent,
  requestContext,
  type UpgradeRequest,
} from '../infra/local/gateway-events.ts';
import { createJoinToken } from '../lib/auth/join-token.ts';
import { dependenciesFromEnv } from '../lib/dependencies.ts';
import type { WorkloadGroup } from '../lib/domain/model.ts';
import { carriedEntryContext, requestedEntry } from '../lib/protocol/carried-entry.ts';
import { parseConnectRequest } from '../lib/protocol/connect-request.ts';
import { authorizerContext, tokenPrincipal } from '../lib/protocol/identity.ts';
import { ROLLOUT_PACE_ANNOTATION } from '../lib/rollout/rollout-pace.ts';
import { createDynamoDbClient } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { type BundledFunction, bundleFunction } from './bundle-size.ts';
import type { RunnerReply } from './handler-heap-runner.ts';
import { heapSlopePer1000 } from './heap-slope.ts';
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

export const HEAP_FUNCTIONS = [
  'authorize',
  'connect',
  'disconnect',
  'message',
  'sweeper',
  'ec2StateChange',
  'rollout',
  'meshIdentity',
] as const satisfies readonly BundledFunction[];

export type HeapFunction = (typeof HEAP_FUNCTIONS)[number];

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

const API = { apiId: 'heap', stage: 'local', region: 'us-east-1' };
const NAMESPACE = 'bench';
const GROUP = 'web';
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

/** A workload: the store made ready for a batch, and the batch's events. */
interface Workload {
  setup?(): Promise<void>;
  batch(size: number): Promise<unknown[]>;
  after?(): Promise<void>;
  /** The function answers every event with a refusal (mesh identity with no cluster). */
  expectRefusal?: boolean;
}

interface Connection {
  vm: number;
  id: string;
  request: UpgradeRequest;
  authorizer: AuthorizerContext;
  connectedAt: number;
  described: boolean;
  healthy: boolean;
}

/**
 * VMs of one namespace and group, in three zones, each with its own address, and the source
 * handlers that connect and disconnect them in this process.
 */
class Fleet {
  readonly #tokenContext: Record<string, string>;
  readonly #token: string;
  readonly #connect: ReturnType<typeof createConnectHandler>;
  readonly #disconnect: ReturnType<typeof createDisconnectHandler>;
  readonly #store: ReturnType<typeof dependenciesFromEnv>['store'];
  readonly management: ManagementApiStandIn;
  #nextVm = 0;

  private constructor(
    token: string,
    tokenContext: Record<string, string>,
    deps: ReturnType<typeof dependenciesFromEnv>,
    management: ManagementApiStandIn,
  ) {
    this.#token = token;
    this.#tokenContext = tokenContext;
    this.#connect = createConnectHandler(deps);
    this.#disconnect = createDisconnectHandler(deps);
    this.#store = deps.store;
    this.management = management;
  }

  /** A group (paced to roll out at once, for the rollout function) and a join token. */
  static async seed(
    env: Record<string, string>,
    management: ManagementApiStandIn,
    rolloutAtOnce: boolean,
  ): Promise<Fleet> {
    const deps = dependenciesFromEnv(env);
    await deps.store.applyGroup(group('v1', rolloutAtOnce));
    const { token, stored } = createJoinToken({
      namespace: NAMESPACE,
      ttlMs: 86_400_000,
      now: Date.now(),
    });
    await deps.tokens.putToken(stored);
    return new Fleet(
      token,
      { principalId: tokenPrincipal(stored), ...authorizerContext(stored) },
      deps,
      management,
    );
  }

  newVm(): number {
    this.#nextVm += 1;
    return this.#nextVm;
  }

  /** A new connection of the VM, as API Gateway would describe it (not yet connected). */
  connection(vm: number, connectedAt = Date.now()): Connection {
    const request = upgrade(this.#token, vm);
    const authorizer: AuthorizerContext = {
      principalId: this.#tokenContext.principalId ?? NAMESPACE,
      integrationLatency: 1,
      ...this.#tokenContext,
      ...carriedEntryContext(
        requestedEntry(
          parseConnectRequest({
            queryStringParameters: request.query,
            multiValueQueryStringParameters: request.multiValueQuery,
          }),
        ),
      ),
    };
    return {
      vm,
      id: gatewayId(),
      request,
      authorizer,
      connectedAt,
      described: false,
      healthy: true,
    };
  }

  authorizerEvent(c: Connection): unknown {
    return authorizerEvent(API, c.request, this.#context(c, 'CONNECT', '$connect', c.connectedAt));
  }

  connectEvent(c: Connection): unknown {
    return connectEvent(c.request, this.#context(c, 'CONNECT', '$connect', c.connectedAt));
  }

  /** A clean close (the agent stopping: 1000) by default; 1006 is a dropped link. */
  disconnectEvent(c: Connection, at = Date.now(), code = 1000): unknown {
    const context = this.#context(c, 'DISCONNECT', '$disconnect', at);
    context.disconnectStatusCode = code;
    context.disconnectReason = '';
    return disconnectEvent(context);
  }

  /** The agent's next message: `describe` first on a new connection, then health reports that flip. */
  messageEvent(c: Connection, at = Date.now()): unknown {
    const body = c.described
      ? JSON.stringify({
          action: 'health',
          healthy: c.healthy,
          ...(c.healthy ? {} : { message: 'probe failed: connection refused' }),
        })
      : JSON.stringify({ action: 'describe' });
    if (c.described) c.healthy = !c.healthy;
    c.described = true;
    const route = JSON.parse(body).action as string;
    return messageEvent(this.#context(c, 'MESSAGE', route, at), body, false);
  }

  sidecarEvent(c: Connection, at = Date.now()): unknown {
    return messageEvent(
      this.#context(c, 'MESSAGE', 'sidecar', at),
      JSON.stringify({ action: 'sidecar' }),
      false,
    );
  }

  /** Registers the connection through the source `$connect` (this process, not counted). */
  async connect(c: Connection): Promise<void> {
    const result = await this.#connect(
      this.connectEvent(c) as never,
      lambdaContext('source-connect', API.region, 10_000),
    );
    if (result.statusCode !== 200) throw new Error(`connect ${c.vm}: ${JSON.stringify(result)}`);
  }

  async disconnect(c: Connection, at = Date.now(), code = 1000): Promise<void> {
    await this.#disconnect(
      this.disconnectEvent(c, at, code) as never,
      lambdaContext('source-disconnect', API.region, 10_000),
    );
  }

  /** A template change: the rollout function brings the held entries to it. */
  async changeTemplate(version: string): Promise<void> {
    await this.#store.applyGroup(group(version, true));
  }

  #context(c: Connection, type: 'CONNECT' | 'MESSAGE' | 'DISCONNECT', route: string, at: number) {
    return requestContext({
      api: API,
      routeKey: route,
      eventType: type,
      connectionId: c.id,
      connectedAt: c.connectedAt,
      at,
      request: c.request,
      authorizer: c.authorizer,
    });
  }
}

function group(version: string, rolloutAtOnce: boolean): WorkloadGroup {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: {
      name: GROUP,
      namespace: NAMESPACE,
      // The rollout function's runs bring every held entry to a change at once.
      ...(rolloutAtOnce ? { annotations: { [ROLLOUT_PACE_ANNOTATION]: '100%/1s' } } : {}),
    },
    spec: {
      metadata: { labels: { app: GROUP } },
      template: { ports: { http: 8080 }, labels: { version } },
      probe: { tcpSocket: { port: 8080 } },
    },
  };
}

const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];

/** VM `vm`'s WebSocket upgrade: its own address (10.a.b.c), one of three zones, the join token. */
function upgrade(token: string, vm: number): UpgradeRequest {
  const ip = `10.${Math.floor(vm / 62_500) % 250}.${Math.floor(vm / 250) % 250}.${1 + (vm % 250)}`;
  const locality = `us-east-1/${ZONES[vm % ZONES.length]}`;
  const query = { group: GROUP, namespace: NAMESPACE, ip, locality };
  return {
    method: 'GET',
    path: `/${API.stage}?group=${GROUP}&namespace=${NAMESPACE}&ip=${ip}&locality=${encodeURIComponent(locality)}`,
    headers: { Authorization: `Bearer ${token}`, Host: 'heap.local' },
    multiValueHeaders: { Authorization: [`Bearer ${token}`], Host: ['heap.local'] },
    query,
    multiValueQuery: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]])),
    sourceIp: ip,
    userAgent: 'registrar-agent/0.3.0',
    domainName: 'heap.local',
  };
}

/** EventBridge's scheduled event, as the sweeper's and the rollout's schedules send it. */
function scheduledEvent(): unknown {
  return {
    version: '0',
    id: crypto.randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: new Date().toISOString(),
    region: API.region,
    resources: ['arn:aws:events:us-east-1:000000000000:rule/registrar-schedule'],
    detail: {},
  };
}

/** EventBridge's EC2 state change of an instance that is not a registered VM (most are not). */
function instanceStateEvent(state: 'shutting-down' | 'terminated'): unknown {
  const instanceId = `i-${[...crypto.getRandomValues(new Uint8Array(9))]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
    .slice(0, 17)}`;
  return {
    version: '0',
    id: crypto.randomUUID(),
    'detail-type': 'EC2 Instance State-change Notification',
    source: 'aws.ec2',
    account: '000000000000',
    time: new Date().toISOString(),
    region: API.region,
    resources: [`arn:aws:ec2:us-east-1:000000000000:instance/${instanceId}`],
    detail: { 'instance-id': instanceId, state },
  };
}

/** `fn` over `items`, `limit` at a time: the source handlers' share of a batch, done sooner. */
async function inParallel<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++];
      if (item !== undefined) await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/**
 * The held connections of `size` VMs, some of them replaced before each batch as agents
 * rotate (make before break: the new connection first, then the old one's clean close), so
 * new connection ids keep arriving at the function. `registered: false` leaves the store out
 * (the mesh identity function refuses before it reads anything).
 */
class HeldPool {
  readonly #fleet: Fleet;
  readonly #size: number;
  readonly #registered: boolean;
  readonly #connections: Connection[] = [];
  #asked = 0;
  #rotated = 0;

  constructor(fleet: Fleet, size: number, registered = true) {
    this.#fleet = fleet;
    this.#size = size;
    this.#registered = registered;
  }

  async fill(): Promise<void> {
    const fresh = Array.from({ length: this.#size }, () =>
      this.#fleet.connection(this.#fleet.newVm()),
    );
    if (this.#registered) await inParallel(fresh, 8, (c) => this.#fleet.connect(c));
    this.#connections.push(...fresh);
  }

  /** Replaces `count` connections; `lost`: the old one's $disconnect never arrives. */
  async rotate(count: number, lost = false): Promise<void> {
    const picks = Array.from({ length: count }, () => this.#rotated++ % this.#size);
    await inParallel(picks, 8, async (index) => {
      const old = this.#connections[index];
      if (!old) return;
      const replacement = this.#fleet.connection(old.vm);
      this.#connections[index] = replacement;
      if (!this.#registered) return;
      await this.#fleet.connect(replacement);
      if (lost) await this.#fleet.management.markGone([old.id]);
      else await this.#fleet.disconnect(old);
    });
  }

  /** The connections take turns. */
  next(): Connection {
    const c = this.#connections[this.#asked++ % this.#connections.length];
    if (!c) throw new Error('the pool is empty: fill() first');
    return c;
  }
}

function workloadOf(name: HeapFunction, fleet: Fleet, total: number, churn: boolean): Workload {
  const times = <T>(n: number, make: (i: number) => T) =>
    Array.from({ length: n }, (_, i) => make(i));
  switch (name) {
    case 'authorize': {
      // Each event a VM of a fleet of 500 connecting (a new connection each time).
      const vms = times(500, () => fleet.newVm());
      let i = 0;
      return {
        batch: async (size) =>
          times(size, () => fleet.authorizerEvent(fleet.connection(vms[i++ % vms.length] ?? 1))),
      };
    }
    case 'connect': {
      // A fleet of 300 VMs: the first round registers them, later rounds reconnect them; each
      // connection is closed cleanly after the batch (the source $disconnect).
      const vms = times(300, () => fleet.newVm());
      let i = 0;
      let open: Connection[] = [];
      return {
        batch: async (size) => {
          open = times(size, () => fleet.connection(vms[i++ % vms.length] ?? 1));
          return open.map((c) => fleet.connectEvent(c));
        },
        after: () => inParallel(open, 8, (c) => fleet.disconnect(c)),
      };
    }
    case 'disconnect': {
      // Connections of a fleet of 300 VMs, registered before the batch (the source $connect);
      // one close in four a dropped link (1006: an abnormal departure, fail static counts it).
      const vms = times(300, () => fleet.newVm());
      let i = 0;
      return {
        batch: async (size) => {
          const open = times(size, () => fleet.connection(vms[i++ % vms.length] ?? 1));
          await inParallel(open, 8, (c) => fleet.connect(c));
          return open.map((c, k) =>
            fleet.disconnectEvent(c, Date.now(), k % 4 === 3 ? 1006 : 1000),
          );
        },
      };
    }
    case 'message': {
      // 200 held connections, 10 of them replaced before each batch: a describe from each new
      // one, then health reports that flip. (The message budget remembers each new connection
      // until it holds 10,000: bounded, but growth here; `sidecarChurn` shows the bound.)
      const pool = new HeldPool(fleet, 200);
      return {
        setup: () => pool.fill(),
        batch: async (size) => {
          await pool.rotate(10);
          return times(size, () => fleet.messageEvent(pool.next()));
        },
      };
    }
    case 'sweeper': {
      // 5 held connections (liveness checks every 30 s), one of them lost before each batch
      // (a phantom holder for the checks to find), and VMs that left 6 minutes ago (past the
      // 5-minute grace: the batch's first run deletes them).
      const pool = new HeldPool(fleet, 5);
      return {
        setup: () => pool.fill(),
        batch: async (size) => {
          await pool.rotate(1, true);
          const left = Date.now() - 6 * 60_000;
          const leavers = times(Math.ceil(size / 5), () =>
            fleet.connection(fleet.newVm(), left - 60_000),
          );
          await inParallel(leavers, 8, async (c) => {
            await fleet.connect(c);
            await fleet.disconnect(c, left);
          });
          return times(size, () => scheduledEvent());
        },
      };
    }
    case 'ec2StateChange':
      return {
        batch: async (size) =>
          times(size, (k) => instanceStateEvent(k % 2 === 0 ? 'shutting-down' : 'terminated')),
      };
    case 'rollout': {
      // 20 held entries and a template change before each batch: its first run rolls it out.
      const pool = new HeldPool(fleet, 20);
      let version = 1;
      return {
        setup: () => pool.fill(),
        batch: async (size) => {
          version += 1;
          await fleet.changeTemplate(`v${version}`);
          return times(size, () => scheduledEvent());
        },
      };
    }
    case 'meshIdentity': {
      // No cluster: every ask is refused, after the per-connection budget (10 a minute), which
      // these connections keep: at most 5 asks each. `sidecarChurn`: each ask from a connection
      // of its own, as at a function that serves a large fleet's hourly refreshes: the budget
      // then remembers every one until it holds 10,000 (its bound), and no more.
      const pool = new HeldPool(fleet, churn ? total : Math.max(500, Math.ceil(total / 5)), false);
      return {
        expectRefusal: true,
        setup: () => pool.fill(),
        batch: async (size) => times(size, () => fleet.sidecarEvent(pool.next())),
      };
    }
  }
}
