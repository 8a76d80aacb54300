import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import { createAuthorizeHandler } from '../../functions/authorize.ts';
import { createConnectHandler } from '../../functions/connect.ts';
import { createDisconnectHandler } from '../../functions/disconnect.ts';
import { createMessageHandler } from '../../functions/message.ts';
import type { RolloutSummary } from '../../functions/rollout.ts';
import { createSweeperHandler, type SweeperSummary } from '../../functions/sweeper.ts';
import { type Config, DEFAULTS, ENV } from '../../lib/config.ts';
import { type Dependencies, dependenciesFromEnv } from '../../lib/dependencies.ts';
import type { Cidr } from '../../lib/domain/cidr.ts';
import type { GroupSource } from '../../lib/domain/group-source.ts';
import { connectionCloser } from '../../lib/gateway/close-connections.ts';
import { connectionNotifier } from '../../lib/gateway/connection-notifier.ts';
import { ManagementApiLiveness } from '../../lib/gateway/management-api-liveness.ts';
import { logger } from '../../lib/observability.ts';
import type { GroupSyncReport } from '../../lib/projection/group-sync.ts';
import type { Target } from '../../lib/projection/report.ts';
import { pongReply } from '../../lib/protocol/replies.ts';
import { createDynamoDbClient, type StoreTransport } from '../../lib/store/dynamodb-client.ts';
import { ensureTable } from '../../lib/store/ensure-table.ts';
import type { RouteThrottle } from '../route-throttle.ts';
import { LOCAL_DEFAULTS } from './defaults.ts';
import type { RunningDynamo } from './dynalite-server.ts';
import { startDynaliteThread } from './dynalite-thread.ts';
import {
  type GatewayLog,
  type GatewayOptions,
  type LocalGateway,
  startGateway,
} from './gateway.ts';
import { lambdaContext } from './gateway-events.ts';
import { startHistoryPruner } from './history-pruner.ts';
import { inInvocationScope } from './invocation-scope.ts';
import { startRefusalTally } from './refusal-tally.ts';
import { groupSourceEnv, startRolloutServices } from './rollout-services.ts';
import { claimRuntimeFiles } from './runtime-files.ts';
import type { IamCallerCredentials } from './sigv4-verifier.ts';
import { startSweepTimer } from './sweep-timer.ts';
import { recordRelease } from './table-release.ts';

export { LOCAL_DEFAULTS } from './defaults.ts';

/** One run of the local sweep schedule, as `onSweepEnd` tells it. */
export interface SweepRunOutcome {
  startedAt: number;
  endedAt: number;
  /** Absent when the run failed (`error`). */
  summary?: SweeperSummary;
  error?: unknown;
}

export interface LocalRuntimeOptions {
  /** Port of the WebSocket gateway and its @connections API; 0 picks a free one. Default 8080. */
  port?: number;
  /** Default 127.0.0.1: the local registrar is for this machine. */
  host?: string;
  /** Where dynalite keeps the registry (under `dynalite/`) and `local.json` goes. Default `.registrar`. */
  dataDir?: string;
  /**
   * Keep the registry in memory: nothing is written to the data dir. With `writeLocalJson` and
   * no `dataDir`, its `local.json` goes to a directory of its own (`localJsonPath`), so a
   * runtime keeping its registry in `.registrar` is not hidden from the CLI.
   */
  memory?: boolean;
  gracePeriodMs?: number;
  maxConnectionAgeMs?: number;
  /** How often the sweeper runs (it also runs once at start). Default 1 min. */
  sweepIntervalMs?: number;
  /**
   * How often the sweeper checks that each connected entry's holders still exist. Default
   * 5 min, or a quarter of the max connection age when that is shorter.
   */
  livenessIntervalMs?: number;
  /** A holder younger than this is never dropped by a liveness check. Default 30 s. */
  connectSettleMs?: number;
  idleTimeoutMs?: number;
  /**
   * The stage's route throttle over messages, per route (`--route-throttle`). Default: the
   * stack's for its default fleet size (LOCAL_DEFAULTS.routeThrottle).
   */
  routeThrottle?: RouteThrottle;
  /**
   * Invocations of each function at once, the rest waiting in line within the integration
   * timeout (`--function-concurrency`). Default LOCAL_DEFAULTS.functionConcurrency.
   */
  functionConcurrency?: number;
  /** Use this DynamoDB (DynamoDB Local in CI) instead of starting dynalite. */
  dynamoDbEndpoint?: string;
  /** Default `workload-registrar`. */
  tableName?: string;
  /**
   * Write `<dataDir>/local.json` so the CLI finds this registrar without flags. A runtime that
   * keeps its registry or its local.json in a data dir locks it (`<dataDir>/runtime.lock`): a
   * second one there refuses to start, naming the first one's PID and port.
   */
  writeLocalJson?: boolean;
  /**
   * Return only once the sweeper's first run ended (default true: an in-process runtime starts
   * from a swept registry, which tests count requests and faults from). `npm start` passes
   * false: its local.json, banner and CLI answer as soon as the gateway listens, not up to a
   * minute later.
   */
  waitForFirstSweep?: boolean;
  /**
   * Told after each run of the sweeper's schedule (lane 0): when it started, and its summary or
   * the error it failed with. A test judges sweep bounds by the runs that happened, not by a
   * wall clock a loaded machine stretches.
   */
  onSweepEnd?: (run: SweepRunOutcome) => void;
  /** The functions' log level (Powertools). */
  logLevel?: LogLevel;
  /**
   * Project the registry into a cluster (dynalite has no streams: a loop). On with `project`,
   * `kubeconfig` or `kubeContext`; the kubeconfig is found as kubectl finds it: this file,
   * else the `KUBECONFIG` list, else `~/.kube/config` (lib/projection/kubeconfig.ts).
   */
  kubeconfig?: string;
  /** The kubeconfig context to project into; its current context when absent. */
  kubeContext?: string;
  /** Project with the kubeconfig kubectl would use. */
  project?: boolean;
  /** Default istio. */
  projectionTargets?: readonly Target[];
  /** Default 10 s. */
  projectionIntervalMs?: number;
  /** The cluster's pod and Service ranges: the projector writes no endpoint in them. */
  clusterRanges?: readonly Cidr[];
  /** More function configuration, by variable (REGISTRAR_GROUP_CACHE_TTL, ...). */
  functionEnv?: Record<string, string>;
  /** How often the rollout function runs (template changes reach live entries). Default 10 s. */
  rolloutIntervalMs?: number;
  /** `cluster`: groups are synced from the projection's cluster (rollout-services.ts). */
  groupSource?: GroupSource;
  /**
   * How $connect is authorized, as the stack's `authMode`: `token` (default) runs the join-token
   * authorizer; `iam` has no authorizer: the gateway verifies the SigV4-presigned upgrade
   * against `iamCallers` (403 otherwise) and $connect allows the caller by a stored policy.
   */
  authMode?: 'token' | 'iam';
  /** IAM mode's local principals: who may sign, with which keys (no IAM runs locally). */
  iamCallers?: readonly IamCallerCredentials[];
  /**
   * IAM mode: a PEM file of the certificates instance identity documents must be signed by
   * (no EC2 signs documents locally: tests sign with their own key); absent, AWS's.
   */
  instanceIdentityCerts?: string;
  /**
   * IAM mode: whether a connect must carry an instance identity document. Default `required`
   * (the functions' own default): `optional` accepts agents that send none.
   */
  instanceAttestation?: 'required' | 'optional';
  /** Serve `registrar dashboard`'s read-only view on 127.0.0.1 at this port (0: any free one). */
  dashboardPort?: number;
}

export interface LocalRuntime {
  /** ws://host:port: where agents connect. */
  url: string;
  /** http://host:port: `/@connections/{id}`. */
  managementUrl: string;
  dynamoDbEndpoint: string;
  tableName: string;
  region: string;
  /** The functions' configuration, as they read it. */
  config: Readonly<Config>;
  /** Where this runtime wrote its `local.json` (with `writeLocalJson`). */
  localJsonPath?: string;
  /** Things worth telling the user at start (a stale lock taken over). */
  notices: readonly string[];
  /** The dashboard's URL, with `dashboardPort`. */
  dashboardUrl?: string;
  /** Where the registry is projected, when it is. */
  projection?: {
    files: readonly string[];
    context: string;
    cluster: { name: string; server: string };
    targets: readonly Target[];
  };
  /**
   * Settles when the runtime's own store (dynalite, on its own thread) stopped unasked; the
   * runtime has closed itself by then. Never settles with `dynamoDbEndpoint`. (Optional only so
   * that a test can describe a runtime running in another process.)
   */
  storeFailed?: Promise<Error>;
  /** Runs the sweeper now (as the EventBridge schedule would). */
  sweepNow(): Promise<SweeperSummary>;
  /** Runs the rollout function now. (Optional only for a runtime described from another process.) */
  rolloutNow?(): Promise<RolloutSummary>;
  /** Groups from the cluster: syncs them now. */
  groupSyncNow?(): Promise<GroupSyncReport>;
  /** Stops the sweeper, closes every connection (each gets $disconnect), then the store. */
  close(): Promise<void>;
}

/**
 * `npm start` as a function: dynalite (or a given DynamoDB), the table, the five handlers built
 * with this runtime's own configuration, the API Gateway stand-in, and the sweeper on a timer.
 * The configuration comes from the options, never from `process.env`, so several runtimes can
 * run side by side in one test process.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const dataDir = options.dataDir ?? LOCAL_DEFAULTS.dataDir;
  const tableName = options.tableName ?? LOCAL_DEFAULTS.tableName;
  const region = DEFAULTS.region;
  const sweepIntervalMs = positive(
    'sweepIntervalMs',
    options.sweepIntervalMs ?? LOCAL_DEFAULTS.sweepIntervalMs,
  );
  if (options.idleTimeoutMs !== undefined) positive('idleTimeoutMs', options.idleTimeoutMs);
  if (options.logLevel) logger.setLogLevel(options.logLevel);

  const files = await claimRuntimeFiles(options, dataDir);
  let dynamo: (RunningDynamo & { failed?: Promise<Error>; transport?: StoreTransport }) | undefined;
  const closeStore = async () => dynamo?.close();
  const cleanup: (() => Promise<void>)[] = [closeStore, files.release];
  try {
    dynamo = options.dynamoDbEndpoint
      ? { endpoint: options.dynamoDbEndpoint, close: async () => {} }
      : await startDynaliteThread(
          files.keepsRegistry ? { dataDir: join(dataDir, 'dynalite') } : {},
        );
    const env = functionEnv(options, dynamo.endpoint, tableName, region);
    const deps = dependenciesFromEnv(
      {
        ...env,
        // The sweeper's liveness windows are as wide as the timer's period.
        [ENV.sweepInterval]: `${sweepIntervalMs}ms`,
      },
      // Our own store thread: over its channel, not HTTP (store-channel.ts).
      dynamo.transport,
    );
    // Liveness checks ask this gateway's own @connections, whose port is known once it
    // listens: the client is built on the first check.
    let managementUrl: string | undefined;
    deps.liveness = new ManagementApiLiveness({
      endpoint: () => managementUrl ?? 'http://127.0.0.1:1',
      region,
      local: true,
    });
    const authorization = connectAuthorization(deps, options.iamCallers);
    const raw = createDynamoDbClient({ region, endpoint: dynamo.endpoint });
    await ensureTable(raw, tableName).finally(() => raw.destroy());
    await recordRelease(deps);
    // Clients read this policy (and the auth mode beside it).
    await deps.sweepPolicy.record(
      { ...deps.config.sweep, authMode: deps.config.authMode },
      deps.now(),
    );

    const message = { functionName: 'registrar-message', handler: createMessageHandler(deps) };
    // `sidecar`: the message function (SidecarUnavailable) until a projection brings a cluster.
    let sidecar = message.handler;
    const sidecarRoute = {
      functionName: 'registrar-mesh-identity',
      handler: ((event, context) => sidecar(event, context)) as typeof sidecar,
    };
    const gateway: LocalGateway = await startGateway({
      port: options.port ?? LOCAL_DEFAULTS.port,
      host: options.host ?? LOCAL_DEFAULTS.host,
      api: { region },
      ...authorization.gateway,
      limits: {
        maxConnectionAgeMs: deps.config.sweep.maxConnectionAgeMs,
        ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs }),
      },
      handlers: {
        ...authorization.handlers,
        connect: { functionName: 'registrar-connect', handler: createConnectHandler(deps) },
        disconnect: {
          functionName: 'registrar-disconnect',
          handler: createDisconnectHandler(deps),
        },
        routes: {
          health: message,
          describe: message,
          drain: message,
          heartbeat: message,
          sidecar: sidecarRoute,
        },
        default: message,
        // API Gateway answers ping itself (a MOCK integration): no Lambda runs.
        mocks: { ping: JSON.stringify(pongReply()) },
      },
      routeThrottle: options.routeThrottle ?? LOCAL_DEFAULTS.routeThrottle,
      functionConcurrency: options.functionConcurrency ?? LOCAL_DEFAULTS.functionConcurrency,
      log: gatewayLog,
    });
    cleanup.unshift(() => gateway.close());
    managementUrl = gateway.managementUrl;
    // A connection over its message budget is closed by the deployed path's own closer (the
    // signed DELETE @connections/{id}), pointed at this gateway.
    const closer = connectionCloser({ endpoint: gateway.managementUrl, region });
    cleanup.unshift(async () => closer.destroy());
    deps.closeConnection = (connectionId) => closer.close(connectionId);
    // The sweeper tells live agents their group's changed heartbeat through this gateway too.
    const notifier = connectionNotifier({ endpoint: gateway.managementUrl, region });
    cleanup.unshift(async () => notifier.destroy());
    deps.notifyConnection = (connectionId, notice) => notifier.post(connectionId, notice);
    await files.listening(gateway.url);

    const sweeper = createSweeperHandler(deps);
    const sweepNow = () => {
      const context = lambdaContext('registrar-sweeper', region, 15 * 60_000);
      return inInvocationScope(context.awsRequestId, () => sweeper({}, context));
    };
    // Awaited only when asked (waitForFirstSweep): `npm start` answers (local.json, the banner,
    // the CLI) as soon as its gateway listens. The first run still starts now; waiting for it
    // kept the CLI saying "no local runtime is running" for up to 55 s while agents were
    // already registered again.
    // A restart on a registry that had VMs: its own shutdown closed every connection (1001
    // Going away, an abnormal departure), and their agents reconnect within seconds. A run at
    // once judged them before they could: every cell 100% away, a fleet-wide HELD that its own
    // rows contradicted a moment later. The first run waits one interval, as the next tick of
    // a schedule that never stopped would.
    const restarted =
      files.keepsRegistry && (await deps.store.listNamespaces()).namespaces.length > 0;
    const onSweepEnd = options.onSweepEnd;
    const scheduledSweep = onSweepEnd
      ? async () => {
          const startedAt = Date.now();
          // Told once per run, whatever the callback does: a callback that throws after a
          // successful run is not told again that the run failed.
          let outcome: Omit<SweepRunOutcome, 'startedAt' | 'endedAt'>;
          try {
            outcome = { summary: await sweepNow() };
          } catch (error) {
            outcome = { error };
          }
          onSweepEnd({ startedAt, endedAt: Date.now(), ...outcome });
          if ('error' in outcome) throw outcome.error;
          return outcome.summary as SweeperSummary;
        }
      : sweepNow;
    const timer = startSweepTimer(
      scheduledSweep,
      sweepIntervalMs,
      (error) => logger.error('sweep failed', { error: String(error) }),
      restarted ? { firstRunAfterMs: sweepIntervalMs } : {},
    );
    cleanup.unshift(async () => (await timer).stop());
    if (options.waitForFirstSweep ?? true) await timer;
    // Heartbeat lanes 1 .. n-1, as the stack's lane rules start them: the same handler, an
    // event naming the lane, a timer each (a lane's run never doubles up, as the sweep's).
    // Each names its tick on one grid from the schedule's start, as EventBridge names the
    // rule's fire time: a lane that starts late still works from its tick's plan.
    const scheduleStart = Date.now();
    const tick = () =>
      new Date(
        scheduleStart +
          Math.floor((Date.now() - scheduleStart) / sweepIntervalMs) * sweepIntervalMs,
      ).toISOString();
    for (let lane = 1; lane < deps.config.heartbeatLanes; lane++) {
      const runLane = () => {
        const context = lambdaContext('registrar-sweeper', region, 15 * 60_000);
        return inInvocationScope(context.awsRequestId, () =>
          sweeper({ heartbeatLane: lane, time: tick() }, context),
        );
      };
      const laneTimer = startSweepTimer(runLane, sweepIntervalMs, (error) =>
        logger.error('heartbeat lane failed', { heartbeatLane: lane, error: String(error) }),
      );
      cleanup.unshift(async () => (await laneTimer).stop());
    }
    // dynalite has no TTL: expired history items of deleted entries go on the sweep's pace.
    const pruner = startHistoryPruner(deps.store, sweepIntervalMs, deps.now, (error) =>
      logger.warn('pruning expired entry history failed', { error: String(error) }),
    );
    cleanup.unshift(() => pruner.stop());

    let projection: LocalRuntime['projection'];
    let projectionConfig: import('@kubernetes/client-node').KubeConfig | undefined;
    if (options.project || options.kubeconfig || options.kubeContext) {
      // Loaded only when asked for: the Kubernetes client is large and most runs do not need it.
      const { resolveKubeConfig } = await import('../../lib/projection/kubeconfig.ts');
      const { startProjectorLoop } = await import('./projector-loop.ts');
      const { projectionStatus } = await import('./projection-status.ts');
      const target = resolveKubeConfig({
        ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}),
        ...(options.kubeContext ? { context: options.kubeContext } : {}),
      });
      const { localMeshIdentityHandler } = await import('./mesh-identity-route.ts');
      sidecar = localMeshIdentityHandler(deps, target.config, env);
      const targets = options.projectionTargets ?? ['istio'];
      projection = {
        files: target.files,
        context: target.context,
        cluster: target.cluster,
        targets,
      };
      const status = projectionStatus(
        { cluster: target.cluster.name, server: target.cluster.server },
        {
          info: (message, fields) => logger.info(message, fields),
          warn: (message, fields) => logger.warn(message, fields),
        },
      );
      const projector = startProjectorLoop({
        kubeConfig: target.config,
        store: deps.store,
        ...(deps.namespaceSettings ? { settings: deps.namespaceSettings } : {}),
        clusterRanges: options.clusterRanges ?? [],
        intervalMs: options.projectionIntervalMs ?? LOCAL_DEFAULTS.projectionIntervalMs,
        targets,
        onReport: (report) => status.report(report),
        onError: (error) => status.failed(error),
      });
      cleanup.unshift(() => projector.stop());
      projectionConfig = target.config;
    }
    const rollouts = await startRolloutServices({
      env: functionEnv(options, dynamo.endpoint, tableName, region),
      dynamoDbEndpoint: dynamo.endpoint,
      tableName,
      region,
      catalog: deps.store,
      managementUrl: () => managementUrl ?? 'http://127.0.0.1:1',
      rolloutIntervalMs: options.rolloutIntervalMs ?? LOCAL_DEFAULTS.rolloutIntervalMs,
      ...(projectionConfig ? { kubeConfig: projectionConfig } : {}),
      syncIntervalMs: options.projectionIntervalMs ?? LOCAL_DEFAULTS.projectionIntervalMs,
      now: deps.now,
    });
    cleanup.unshift(() => rollouts.stop());

    const runtime = {
      url: gateway.url,
      managementUrl: gateway.managementUrl,
      dynamoDbEndpoint: dynamo.endpoint,
      tableName,
      region,
    };
    const localJson = join(files.localJsonDir, 'local.json');
    if (options.writeLocalJson) {
      await mkdir(files.localJsonDir, { recursive: true });
      // Written aside and renamed into place: a CLI (or anything waiting for the file) that
      // reads it while it is being written would otherwise find it empty or cut short.
      const draft = `${localJson}.${process.pid}.tmp`;
      await writeFile(draft, `${JSON.stringify(runtime, null, 2)}\n`);
      await rename(draft, localJson);
      // Before the store closes: a CLI must not find a registrar that no longer answers.
      cleanup.splice(cleanup.indexOf(closeStore), 0, () => removeIfOurs(localJson, runtime.url));
      // Refusals by reason for `registrar dashboard`, beside local.json (CloudWatch's on AWS).
      cleanup.unshift(await startRefusalTally(files.localJsonDir, deps.now));
    }
    let dashboardUrl: string | undefined;
    if (options.dashboardPort !== undefined) {
      const { startRuntimeDashboard } = await import('./runtime-dashboard.ts');
      const dashboard = await startRuntimeDashboard({
        deps,
        store: { region, endpoint: dynamo.endpoint, tableName },
        port: options.dashboardPort,
        target: `table '${tableName}' at ${dynamo.endpoint} (this runtime's)`,
        localJsonDir: options.writeLocalJson ? files.localJsonDir : undefined,
      });
      cleanup.unshift(() => dashboard.close());
      dashboardUrl = dashboard.url;
    }
    const close = once(() => runAll(cleanup));
    // Without its store the runtime would accept agents it cannot register: it stops (its
    // $disconnects fail, the store being gone) and `npm start` exits with the store's message.
    const storeFailed = (dynamo.failed ?? new Promise<never>(() => {})).then(async (error) => {
      await close().catch(() => {});
      return error;
    });
    return {
      ...runtime,
      config: deps.config,
      ...(options.writeLocalJson ? { localJsonPath: localJson } : {}),
      notices: files.notices,
      ...(projection ? { projection } : {}),
      ...(dashboardUrl ? { dashboardUrl } : {}),
      storeFailed,
      sweepNow,
      rolloutNow: rollouts.rolloutNow,
      ...(rollouts.groupSyncNow ? { groupSyncNow: rollouts.groupSyncNow } : {}),
      close,
    };
  } catch (error) {
    await runAll(cleanup);
    throw error;
  }
}

/**
 * $connect's authorization as the CDK stack sets it up for the functions' auth mode: the token
 * authorizer with its identity source, or IAM (the gateway's SigV4 check, no authorizer).
 */
function connectAuthorization(
  deps: Dependencies,
  iamCallers: readonly IamCallerCredentials[] | undefined,
): {
  gateway: Pick<GatewayOptions, 'identitySource' | 'iamAuthorization'>;
  handlers: Pick<GatewayOptions['handlers'], 'authorize'>;
} {
  if (deps.config.authMode === 'iam') {
    if (!iamCallers || iamCallers.length === 0) {
      throw new Error(
        `${ENV.authMode}=iam needs iamCallers (npm start --iam-callers <file>): the local gateway verifies SigV4 signatures against their keys`,
      );
    }
    return { gateway: { iamAuthorization: { callers: iamCallers } }, handlers: {} };
  }
  return {
    // As the CDK stack configures the token authorizer.
    gateway: { identitySource: ['route.request.header.Authorization'] },
    handlers: {
      authorize: { functionName: 'registrar-authorize', handler: createAuthorizeHandler(deps) },
    },
  };
}

/** The environment the functions would get from the CDK stack, built from the options. */
function functionEnv(
  options: LocalRuntimeOptions,
  endpoint: string,
  tableName: string,
  region: string,
): Record<string, string> {
  const env: Record<string, string> = {
    ...options.functionEnv,
    ...groupSourceEnv(options.groupSource),
    [ENV.tableName]: tableName,
    [ENV.dynamoDbEndpoint]: endpoint,
    [ENV.region]: region,
  };
  if (options.authMode !== undefined) env[ENV.authMode] = options.authMode;
  if (options.instanceIdentityCerts !== undefined) {
    env[ENV.instanceIdentityCerts] = options.instanceIdentityCerts;
  }
  if (options.instanceAttestation !== undefined) {
    env[ENV.instanceAttestation] = options.instanceAttestation;
  }
  // Milliseconds pass through readConfig's validation like any configured duration.
  if (options.gracePeriodMs !== undefined) env[ENV.gracePeriod] = `${options.gracePeriodMs}ms`;
  if (options.maxConnectionAgeMs !== undefined) {
    env[ENV.maxConnectionAge] = `${options.maxConnectionAgeMs}ms`;
  }
  if (options.livenessIntervalMs !== undefined) {
    env[ENV.livenessInterval] = `${options.livenessIntervalMs}ms`;
  }
  if (options.connectSettleMs !== undefined)
    env[ENV.connectSettle] = `${options.connectSettleMs}ms`;
  return env;
}

function positive(name: string, ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0)
    throw new RangeError(`${name} must be a positive duration, got ${ms}`);
  return ms;
}

const gatewayLog: GatewayLog = (level, message, fields) =>
  logger[level](`gateway: ${message}`, { ...fields });

/** A second runtime may have taken over the file since; leave its file alone. */
async function removeIfOurs(path: string, url: string): Promise<void> {
  try {
    const current = JSON.parse(await readFile(path, 'utf8')) as { url?: string };
    if (current.url === url) await rm(path, { force: true });
  } catch {
    // Already gone or unreadable: nothing of ours to remove.
  }
}

/** Runs every step even when one fails, in order, and reports the first failure. */
async function runAll(steps: (() => Promise<void>)[]): Promise<void> {
  const results = [];
  for (const step of steps)
    results.push(
      await step().then(
        () => undefined,
        (error: unknown) => error,
      ),
    );
  const failure = results.find((error) => error !== undefined);
  if (failure !== undefined) throw failure;
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= fn();
    return running;
  };
}
