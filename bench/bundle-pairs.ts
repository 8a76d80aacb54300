import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createConnectHandler } from '../functions/connect.ts';
import {
  FUNCTION_ENTRIES,
  type FunctionName,
  REPO_ROOT,
  WEBSOCKET_FUNCTIONS,
} from '../infra/constructs/bundling.ts';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import {
  authorizerEvent,
  connectEvent,
  disconnectEvent,
  messageEvent,
  requestContext,
  type UpgradeRequest,
  type WebSocketRequestContext,
} from '../infra/local/gateway-events.ts';
import { createJoinToken } from '../lib/auth/join-token.ts';
import { dependenciesFromEnv } from '../lib/dependencies.ts';
import { carriedEntryContext, requestedEntry } from '../lib/protocol/carried-entry.ts';
import { parseConnectRequest } from '../lib/protocol/connect-request.ts';
import { authorizerContext, tokenPrincipal } from '../lib/protocol/identity.ts';
import { createDynamoDbClient } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';

/**
 * `npm run bench -- bundles`: each WebSocket function's bundle at this tree and at a base
 * commit (default `HEAD~`, or `BENCH_BASE_REF`), built in the same run (the base from a
 * `git worktree add` of it, with its own bundling settings) and measured side by side:
 * size; import time in a fresh process (Lambda's cold start as the bundle decides it; no
 * source maps); the first invocation (clients built, first request signed and answered, here
 * by dynalite); and the handler's CPU per warm event after it. Runs alternate base and head,
 * so both see the same machine; medians of `runs`. CPU times (process.cpuUsage) are the
 * figures to quote on a shared machine; wall times need a quiet one.
 */
export interface BundleSide {
  commit: string;
  bytes: number;
  importMs: number;
  /** From the process's start to the bundle evaluated (bench/bundle-invoke.ts). */
  initMs: number;
  importCpuMs: number;
  firstMs: number;
  firstCpuMs: number;
  warmCpuMs: number;
  ok: boolean;
}

export interface BundlePair {
  name: FunctionName;
  base: BundleSide | undefined;
  head: BundleSide;
}

/** Warm invocations per run after the first: 20, or BENCH_BUNDLE_WARM_EVENTS (more smooths JIT and GC). */
const WARM_EVENTS = Number(process.env.BENCH_BUNDLE_WARM_EVENTS ?? 20);
const API = { apiId: 'bench', stage: 'local', region: 'us-east-1' };
const TABLE = 'bench-bundles';

export async function measureBundlePairs(
  options: { base?: string; runs?: number } = {},
): Promise<BundlePair[]> {
  const runs = options.runs ?? 5;
  const baseRef = options.base ?? process.env.BENCH_BASE_REF ?? 'HEAD~';
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', REPO_ROOT, ...args], { encoding: 'utf8' }).trim();
  const baseCommit = git('rev-parse', '--short', baseRef);
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  const headCommit = `${git('rev-parse', '--short', 'HEAD')}${dirty ? '+changes' : ''}`;
  const dir = await mkdtemp(join(tmpdir(), 'bundle-pairs-'));
  const baseTree = join(dir, 'base');
  const dynamo = await startDynalite();
  try {
    git('worktree', 'add', '--detach', baseTree, baseCommit);
    // The base's own code with this tree's packages (the lockfile rarely differs between
    // neighbours; a package change shows in the head's size either way).
    await symlink(join(REPO_ROOT, 'node_modules'), join(baseTree, 'node_modules'));
    const trees = { base: baseTree, head: REPO_ROOT };
    const built = { base: join(dir, 'base-out'), head: join(dir, 'head-out') };
    for (const side of ['base', 'head'] as const) buildBundles(trees[side], built[side]);

    const raw = createDynamoDbClient({ region: API.region, endpoint: dynamo.endpoint });
    await ensureTable(raw, TABLE).finally(() => raw.destroy());
    const env = functionEnv(dynamo.endpoint);
    const seeded = await seed(env);

    const pairs: BundlePair[] = [];
    for (const name of Object.keys(FUNCTION_ENTRIES) as FunctionName[]) {
      const samples: Record<'base' | 'head', Omit<BundleSide, 'commit' | 'bytes'>[]> = {
        base: [],
        head: [],
      };
      // Invoked: the WebSocket functions, whose cold starts connecting agents wait for.
      const invoked = WEBSOCKET_FUNCTIONS.includes(name);
      for (let run = 0; invoked && run < runs; run += 1) {
        for (const side of ['base', 'head'] as const) {
          const file = join(built[side], name, 'index.mjs');
          if (!existsSync(file)) continue;
          const events = await eventsFor(name, seeded, `${side}-${run}`);
          const eventsFile = join(dir, `${name}-${side}-${run}.json`);
          await writeFile(
            eventsFile,
            JSON.stringify({ functionName: `registrar-${name}`, events }),
          );
          samples[side].push(await invoke(file, eventsFile, env));
        }
      }
      const summary = async (side: 'base' | 'head', commit: string) => {
        const file = join(built[side], name, 'index.mjs');
        if (!existsSync(file)) return undefined;
        return { commit, bytes: (await stat(file)).size, ...medians(samples[side]) };
      };
      const head = await summary('head', headCommit);
      if (!head) throw new Error(`no bundle of ${name} at the head`);
      pairs.push({ name, base: await summary('base', baseCommit), head });
    }
    return pairs;
  } finally {
    await dynamo.close();
    spawnSync('git', ['-C', REPO_ROOT, 'worktree', 'remove', '--force', baseTree]);
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Each WebSocket function's bundle in `builtDir` (`<name>/index.mjs`), imported by a fresh
 * process as Lambda does and invoked with `events` events against a fresh dynalite: whether
 * every invocation answered as on its common path. What test/infra/bundle-invoke.test.ts
 * holds: a bundle that imports but fails when it runs (a module left out or substituted) is
 * caught before it is deployed.
 */
export async function invokeBuiltBundles(
  builtDir: string,
  events = 2,
): Promise<Record<string, Omit<BundleSide, 'commit' | 'bytes'>>> {
  const dir = await mkdtemp(join(tmpdir(), 'bundle-invoke-'));
  const dynamo = await startDynalite();
  try {
    const raw = createDynamoDbClient({ region: API.region, endpoint: dynamo.endpoint });
    await ensureTable(raw, TABLE).finally(() => raw.destroy());
    const env = functionEnv(dynamo.endpoint);
    const seeded = await seed(env);
    const results: Record<string, Omit<BundleSide, 'commit' | 'bytes'>> = {};
    for (const name of WEBSOCKET_FUNCTIONS) {
      const all = await eventsFor(name, seeded, 'smoke');
      const eventsFile = join(dir, `${name}.json`);
      await writeFile(
        eventsFile,
        JSON.stringify({ functionName: `registrar-${name}`, events: all.slice(0, events) }),
      );
      results[name] = await invoke(join(builtDir, name, 'index.mjs'), eventsFile, env);
    }
    return results;
  } finally {
    await dynamo.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** A tree's own bench/bundle-size.ts builds its bundles, with that tree's settings. */
function buildBundles(tree: string, outdir: string): void {
  // The tree's own list of functions: a function new at the head has no base.
  const script = `const { bundleFunction } = await import(${JSON.stringify(join(tree, 'bench/bundle-size.ts'))});
const { FUNCTION_ENTRIES } = await import(${JSON.stringify(join(tree, 'infra/constructs/bundling.ts'))});
for (const name of Object.keys(FUNCTION_ENTRIES)) await bundleFunction(name, { outdir: ${JSON.stringify(outdir)} + '/' + name });`;
  execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: tree,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** What the stack gives a function, pointed at dynalite; fixed credentials for the signer. */
function functionEnv(endpoint: string): Record<string, string> {
  return {
    REGISTRAR_TABLE: TABLE,
    REGISTRAR_DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: API.region,
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    POWERTOOLS_SERVICE_NAME: 'workload-registrar',
    POWERTOOLS_METRICS_NAMESPACE: 'WorkloadRegistrar',
    POWERTOOLS_LOG_LEVEL: 'INFO',
  };
}

/** Asynchronously: dynalite answers from this process while the function runs in its own. */
async function invoke(
  file: string,
  eventsFile: string,
  env: Record<string, string>,
): Promise<Omit<BundleSide, 'commit' | 'bytes'>> {
  const { stdout: out } = await promisify(execFile)(
    process.execPath,
    [join(REPO_ROOT, 'bench/bundle-invoke.ts'), file, eventsFile],
    {
      env: { PATH: process.env.PATH, NODE_OPTIONS: '', ...env },
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    },
  );
  const line = out.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`no result from ${file}: ${out.slice(-500)}`);
  return JSON.parse(line.slice('RESULT '.length));
}

interface Seeded {
  token: string;
  context: Record<string, string>;
  connect: ReturnType<typeof createConnectHandler>;
}

/** A group and a join token; the source connect handler registers what a run needs held. */
async function seed(env: Record<string, string>): Promise<Seeded> {
  const deps = dependenciesFromEnv(env);
  await deps.store.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: 'bench' },
    spec: { template: { ports: { http: 8080 } }, probe: { tcpSocket: { port: 8080 } } },
  });
  const { token, stored } = createJoinToken({
    namespace: 'bench',
    ttlMs: 86_400_000,
    now: Date.now(),
  });
  await deps.tokens.putToken(stored);
  return {
    token,
    context: { principalId: tokenPrincipal(stored), ...authorizerContext(stored) },
    connect: createConnectHandler(deps),
  };
}

let counter = 0;

/** One run's events: the first invocation's, then WARM_EVENTS more, each its own VM. */
async function eventsFor(name: FunctionName, seeded: Seeded, tag: string): Promise<unknown[]> {
  const events: unknown[] = [];
  for (let i = 0; i <= WARM_EVENTS; i += 1) {
    counter += 1;
    const ip = `10.${(counter >> 16) & 255}.${(counter >> 8) & 255}.${counter & 255}`;
    const request = upgrade(seeded.token, ip);
    const query = {
      queryStringParameters: request.query,
      multiValueQueryStringParameters: request.multiValueQuery,
    };
    const authorizer = {
      principalId: seeded.context.principalId ?? 'bench',
      integrationLatency: 1,
      ...seeded.context,
      ...carriedEntryContext(requestedEntry(parseConnectRequest(query))),
    };
    const at = Date.now();
    const context = (
      eventType: 'CONNECT' | 'MESSAGE' | 'DISCONNECT',
      routeKey: string,
      id: string,
    ) =>
      requestContext({
        api: API,
        routeKey,
        eventType,
        connectionId: id,
        connectedAt: at,
        at,
        request,
        authorizer,
      });
    const id = `${tag}-${i}-${counter}`;
    if (name === 'authorize') {
      events.push(authorizerEvent(API, request, context('CONNECT', '$connect', id)));
    } else if (name === 'connect') {
      events.push(connectEvent(request, context('CONNECT', '$connect', id)));
    } else {
      // Held by this connection first (the source handler), as an agent's would be.
      const held = connectEvent(request, context('CONNECT', '$connect', id));
      await seeded.connect(held as never, {} as never);
      const ctx: WebSocketRequestContext = context(
        name === 'message' ? 'MESSAGE' : 'DISCONNECT',
        name === 'message' ? 'health' : '$disconnect',
        id,
      );
      events.push(
        name === 'message'
          ? messageEvent(ctx, JSON.stringify({ action: 'health', healthy: true }), false)
          : disconnectEvent(ctx),
      );
    }
  }
  return events;
}

function upgrade(token: string, ip: string): UpgradeRequest {
  const query = { group: 'web', namespace: 'bench', ip };
  return {
    method: 'GET',
    path: `/local?group=web&namespace=bench&ip=${ip}`,
    headers: { Authorization: `Bearer ${token}`, Host: 'bench.local' },
    multiValueHeaders: { Authorization: [`Bearer ${token}`], Host: ['bench.local'] },
    query,
    multiValueQuery: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]])),
    sourceIp: ip,
    userAgent: 'bench',
    domainName: 'bench.local',
  };
}

function medians(
  samples: Omit<BundleSide, 'commit' | 'bytes'>[],
): Omit<BundleSide, 'commit' | 'bytes'> {
  const median = (pick: (s: Omit<BundleSide, 'commit' | 'bytes'>) => number) => {
    const sorted = samples.map(pick).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  };
  return {
    importMs: median((s) => s.importMs),
    initMs: median((s) => s.initMs),
    importCpuMs: median((s) => s.importCpuMs),
    firstMs: median((s) => s.firstMs),
    firstCpuMs: median((s) => s.firstCpuMs),
    warmCpuMs: median((s) => s.warmCpuMs),
    ok: samples.length > 0 && samples.every((s) => s.ok),
  };
}
