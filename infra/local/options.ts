import { readFileSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { loadTrustedCertificates } from '../../lib/auth/instance-identity-document.ts';
import {
  ConfigError,
  DEFAULTS,
  ENV,
  MAX_LIVENESS_WINDOWS,
  minLivenessIntervalMs,
  readConfig,
} from '../../lib/config.ts';
import { formatDuration, parseDuration } from '../../lib/domain/duration.ts';
import type { GroupSource } from '../../lib/domain/group-source.ts';
import { parseClusterRanges, parseTargets } from '../../lib/projection/projector-config.ts';
import {
  ROLLOUT_ENV,
  type RolloutConfig,
  readRolloutConfig,
} from '../../lib/rollout/rollout-config.ts';
import { parseRouteThrottle } from '../route-throttle.ts';
import { type ConsoleSettings, parseConsoleLevel } from './console-log.ts';
import { LOCAL_DEFAULTS } from './defaults.ts';
import { parseFunctionConcurrency } from './function-concurrency.ts';
import type { LocalRuntimeOptions } from './runtime.ts';
import { type IamCallerCredentials, validateCallers } from './sigv4-verifier.ts';

/**
 * `npm start` flags and their environment variables; a flag wins over its variable. A bad value
 * stops the start with the option's name and the value (exit 2), never a silent default.
 */
export class OptionsError extends Error {}

export type ParsedCommand =
  | { kind: 'help'; text: string }
  | { kind: 'run'; options: LocalRuntimeOptions; console: ConsoleSettings };

const DURATIONS = {
  'grace-period': { env: 'REGISTRAR_GRACE_PERIOD', key: 'gracePeriodMs' },
  'max-connection-age': { env: 'REGISTRAR_MAX_CONNECTION_AGE', key: 'maxConnectionAgeMs' },
  'sweep-interval': { env: 'REGISTRAR_SWEEP_INTERVAL', key: 'sweepIntervalMs' },
  'idle-timeout': { env: 'REGISTRAR_IDLE_TIMEOUT', key: 'idleTimeoutMs' },
  'projection-interval': { env: 'REGISTRAR_PROJECTION_INTERVAL', key: 'projectionIntervalMs' },
  'liveness-interval': { env: 'REGISTRAR_LIVENESS_INTERVAL', key: 'livenessIntervalMs' },
  'connect-settle': { env: 'REGISTRAR_CONNECT_SETTLE', key: 'connectSettleMs' },
  'rollout-interval': { env: 'REGISTRAR_ROLLOUT_INTERVAL', key: 'rolloutIntervalMs' },
} as const;

/**
 * Options the functions read from their environment, as the stack sets them: passed through
 * to the functions, and checked at parse time by the functions' own config reader so a bad
 * value names the flag (or variable) it came from.
 */
const FUNCTION_SETTINGS = {
  'disruption-threshold': ENV.disruptionThreshold,
  'disruption-window': ENV.disruptionWindow,
  'secondary-deletes-per-second': ENV.secondaryDeletesPerSecond,
  'hold-bound': ENV.holdBound,
  'ec2-states': ENV.ec2States,
  'heartbeat-lanes': ENV.heartbeatLanes,
} as const;

export const USAGE = `Usage: npm start -- [options]

Runs the registrar locally: dynalite, the WebSocket gateway (API Gateway's stand-in) with the
real handlers, and the sweeper on a timer.

Options (a flag wins over its environment variable):
  --port <n>                  REGISTRAR_PORT                gateway and @connections port, 0 = any free (default ${LOCAL_DEFAULTS.port})
  --grace-period <d>          REGISTRAR_GRACE_PERIOD        disconnected entries are swept after this (default 5m)
  --max-connection-age <d>    REGISTRAR_MAX_CONNECTION_AGE  connections are closed after this (default 2h)
  --sweep-interval <d>        REGISTRAR_SWEEP_INTERVAL      how often the sweeper runs (default 1m)
  --idle-timeout <d>          REGISTRAR_IDLE_TIMEOUT        idle connections are closed after this (default 10m)
  --route-throttle <r>[/<b>]  REGISTRAR_ROUTE_THROTTLE      messages per second per route, and at once, as the stage's throttle
                                                            (default ${LOCAL_DEFAULTS.routeThrottle.rateLimit}/${LOCAL_DEFAULTS.routeThrottle.burstLimit}, the stack's for fleetSize 10000)
  --function-concurrency <n>  REGISTRAR_FUNCTION_CONCURRENCY invocations of each function at once; the rest wait their turn
                                                            within the integration timeout (default ${LOCAL_DEFAULTS.functionConcurrency})
  --liveness-interval <d>     REGISTRAR_LIVENESS_INTERVAL   how often each connected entry's connections are checked with
                                                            GET @connections (default 5m, or max age / 4 when shorter)
  --connect-settle <d>        REGISTRAR_CONNECT_SETTLE      a connection younger than this is never dropped by a liveness
                                                            check: its $connect may still be running (default 30s)
  --data-dir <path>           REGISTRAR_DATA_DIR            where the registry and local.json are kept (default ${LOCAL_DEFAULTS.dataDir})
  --memory                                                  keep the registry in memory only (local.json in a temp dir)
  --project                                                 project the registry into the cluster of the kubeconfig kubectl uses (docs/kubernetes.md)
  --kubeconfig <path>         REGISTRAR_KUBECONFIG          project, with this kubeconfig (default: KUBECONFIG, else ~/.kube/config)
  --context <name>            REGISTRAR_KUBE_CONTEXT        project, into this kubeconfig context (default: its current context)
  --projection-targets <l>    REGISTRAR_PROJECTION_TARGETS  istio, linkerd, endpointslices, comma-separated (default istio)
  --projection-interval <d>   REGISTRAR_PROJECTION_INTERVAL how often the projector reconciles (default 10s)
  --cluster-ranges <cidrs>    REGISTRAR_CLUSTER_RANGES      the cluster's pod and Service CIDRs: the projector writes no
                                                            endpoint in them (docs/kubernetes.md finds them)
  --auth-mode <m>             REGISTRAR_AUTH_MODE           token (join tokens, default) or iam (SigV4, as the stack's authMode=iam)
  --iam-callers <path>        REGISTRAR_IAM_CALLERS         iam mode: JSON/YAML list of {accessKeyId, secretAccessKey, arn} that may sign
  --instance-identity-certs <pem>
                              REGISTRAR_INSTANCE_IDENTITY_CERTS  iam mode: verify EC2 instance identity documents against the
                                                            certificates of this PEM file (default: AWS's)
  --instance-attestation <m>  REGISTRAR_INSTANCE_ATTESTATION iam mode: required (default) or optional: whether a connect must
                                                            carry a document; iam mode needs one of these two flags
  --group-source <s>          REGISTRAR_GROUP_SOURCE        where WorkloadGroups come from: registry (registrar apply, default) or
                                                            cluster (synced from the projection's cluster; needs --project)
  --group-selector <sel>      REGISTRAR_GROUP_SELECTOR      with --group-source cluster: only WorkloadGroups with these labels
  --rollout-interval <d>      REGISTRAR_ROLLOUT_INTERVAL    how often template changes are rolled out to live entries (default 10s)
  --log-format <f>            REGISTRAR_LOG_FORMAT          human: one line per event (default); json: the functions' raw JSON lines
  --dashboard                                               also serve registrar dashboard's read-only view on 127.0.0.1 (docs/operations.md)
  --dashboard-port <n>        REGISTRAR_DASHBOARD_PORT      its port, 0 = any free (default ${LOCAL_DEFAULTS.dashboardPort}); the flag implies --dashboard
  --heartbeat-lanes <n>       REGISTRAR_HEARTBEAT_LANES     sweeper invocations sharing the heartbeat groups' checks, 1-16 (default 1)
  Fail static (docs/operations.md):
  --disruption-threshold <s>  REGISTRAR_DISRUPTION_THRESHOLD share of a zone away abnormally that slows it (default 55%)
  --disruption-window <d>     REGISTRAR_DISRUPTION_WINDOW   no connect anywhere for this long, entries away: hold (default 5m)
  --secondary-deletes-per-second <n>
                              REGISTRAR_SWEEP_SECONDARY_DELETES_PER_SECOND  a disrupted zone's deletion rate (default 0.1)
  --hold-bound <d>            REGISTRAR_SWEEP_HOLD_BOUND    a hold lasts at most this long (default 1h)
  --ec2-states <l>            REGISTRAR_EC2_STATES          EC2 states that remove an instance's entries (default shutting-down,terminated)
  --help                                                    show this help

LOG_LEVEL (debug, info, warn, error, silent; default info) sets what the console shows:
events are info, warnings and refusals warn; debug adds every other line.

Durations: 500ms, 10s, 5m, 2h (or combined, 1h30m).
`;

/** Every flag of `npm start` (README's table lists each one; test/unit/docs-match-code.test.ts). */
export const LOCAL_OPTIONS = {
  port: { type: 'string' },
  'grace-period': { type: 'string' },
  'max-connection-age': { type: 'string' },
  'sweep-interval': { type: 'string' },
  'idle-timeout': { type: 'string' },
  'liveness-interval': { type: 'string' },
  'connect-settle': { type: 'string' },
  'data-dir': { type: 'string' },
  memory: { type: 'boolean' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  project: { type: 'boolean' },
  'projection-targets': { type: 'string' },
  'projection-interval': { type: 'string' },
  'cluster-ranges': { type: 'string' },
  'auth-mode': { type: 'string' },
  'iam-callers': { type: 'string' },
  'instance-identity-certs': { type: 'string' },
  'instance-attestation': { type: 'string' },
  'log-format': { type: 'string' },
  'group-source': { type: 'string' },
  'group-selector': { type: 'string' },
  'rollout-interval': { type: 'string' },
  'disruption-threshold': { type: 'string' },
  'disruption-window': { type: 'string' },
  'secondary-deletes-per-second': { type: 'string' },
  'hold-bound': { type: 'string' },
  'ec2-states': { type: 'string' },
  'heartbeat-lanes': { type: 'string' },
  dashboard: { type: 'boolean' },
  'dashboard-port': { type: 'string' },
  'route-throttle': { type: 'string' },
  'function-concurrency': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

export function parseLocalOptions(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): ParsedCommand {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: LOCAL_OPTIONS,
    }));
  } catch (error) {
    throw new OptionsError(`${(error as Error).message}; see --help`);
  }
  if (values.help) return { kind: 'help', text: USAGE };

  const pick = (flag: string, variable: string): { value: string; source: string } | undefined => {
    const fromFlag = values[flag];
    if (typeof fromFlag === 'string') return { value: fromFlag, source: `--${flag}` };
    const fromEnv = env[variable];
    return fromEnv === undefined || fromEnv === ''
      ? undefined
      : { value: fromEnv, source: variable };
  };

  const options: LocalRuntimeOptions = { port: LOCAL_DEFAULTS.port };
  const port = pick('port', 'REGISTRAR_PORT');
  if (port) options.port = parsePort(port.value, port.source);
  for (const [flag, { env: variable, key }] of Object.entries(DURATIONS)) {
    const given = pick(flag, variable);
    if (given) options[key] = parsePositiveDuration(given.value, given.source);
  }
  checkLivenessInterval(options, pick);
  const dashboardPort = pick('dashboard-port', 'REGISTRAR_DASHBOARD_PORT');
  if (values.dashboard || typeof values['dashboard-port'] === 'string') {
    options.dashboardPort = dashboardPort
      ? parsePort(dashboardPort.value, dashboardPort.source)
      : LOCAL_DEFAULTS.dashboardPort;
  }
  const throttle = pick('route-throttle', 'REGISTRAR_ROUTE_THROTTLE');
  if (throttle) options.routeThrottle = parseNamed(throttle, parseRouteThrottle);
  const concurrency = pick('function-concurrency', 'REGISTRAR_FUNCTION_CONCURRENCY');
  if (concurrency) options.functionConcurrency = parseNamed(concurrency, parseFunctionConcurrency);
  const dataDir = pick('data-dir', 'REGISTRAR_DATA_DIR');
  if (dataDir) options.dataDir = dataDir.value;
  if (values.memory) options.memory = true;
  const kubeconfig = pick('kubeconfig', 'REGISTRAR_KUBECONFIG');
  if (kubeconfig) options.kubeconfig = kubeconfig.value;
  const context = pick('context', 'REGISTRAR_KUBE_CONTEXT');
  if (context) options.kubeContext = context.value;
  if (values.project) options.project = true;
  const targets = pick('projection-targets', 'REGISTRAR_PROJECTION_TARGETS');
  if (targets) options.projectionTargets = parseNamed(targets, parseTargets);
  const groupSource = groupSourceOption(pick, options);
  if (groupSource) options.groupSource = groupSource;
  const clusterRanges = pick('cluster-ranges', 'REGISTRAR_CLUSTER_RANGES');
  if (clusterRanges) {
    try {
      options.clusterRanges = parseClusterRanges(clusterRanges.value, clusterRanges.source);
    } catch (error) {
      throw new OptionsError((error as Error).message);
    }
  }
  const authMode = pick('auth-mode', 'REGISTRAR_AUTH_MODE');
  if (authMode) {
    if (authMode.value !== 'token' && authMode.value !== 'iam') {
      throw new OptionsError(
        `invalid ${authMode.source} '${authMode.value}': must be token or iam`,
      );
    }
    options.authMode = authMode.value;
  }
  for (const [flag, variable] of Object.entries(FUNCTION_SETTINGS)) {
    const given = pick(flag, variable);
    if (!given) continue;
    try {
      readConfig({ [ENV.tableName]: 'check', [variable]: given.value });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      throw new OptionsError(
        `invalid ${given.source} '${given.value}': ${error.message.replace(/^.*?\): /, '')}`,
      );
    }
    options.functionEnv = { ...options.functionEnv, [variable]: given.value };
  }
  // The sidecar bootstrap's mesh settings (docs/kubernetes.md), for `--project`; checked at start.
  for (const [variable, value] of Object.entries(env)) {
    if (variable.startsWith('REGISTRAR_MESH_') && value) {
      options.functionEnv = { ...options.functionEnv, [variable]: value };
    }
  }
  const callers = pick('iam-callers', 'REGISTRAR_IAM_CALLERS');
  if (options.authMode === 'iam' && !callers) {
    throw new OptionsError(
      '--auth-mode iam needs --iam-callers <path> (REGISTRAR_IAM_CALLERS): the local gateway verifies SigV4 against those keys',
    );
  }
  if (callers) {
    if (options.authMode !== 'iam') {
      throw new OptionsError(`${callers.source} is used only with --auth-mode iam`);
    }
    options.iamCallers = readIamCallers(callers.value, callers.source);
  }
  const certs = pick('instance-identity-certs', ENV.instanceIdentityCerts);
  if (certs) {
    if (options.authMode !== 'iam') {
      throw new OptionsError(
        `${certs.source} is used only with --auth-mode iam: token-mode agents present no instance identity document`,
      );
    }
    try {
      loadTrustedCertificates(certs.value, certs.source);
    } catch (error) {
      throw new OptionsError(`invalid ${(error as Error).message}`);
    }
    options.instanceIdentityCerts = certs.value;
  }
  const attestation = instanceAttestation(pick('instance-attestation', ENV.instanceAttestation));
  if (attestation && options.authMode !== 'iam') {
    throw new OptionsError(
      `${attestation.source} is used only with --auth-mode iam: token-mode agents present no instance identity document`,
    );
  }
  if (attestation) options.instanceAttestation = attestation.mode;
  if (options.authMode === 'iam' && !certs && !attestation) throw new OptionsError(IAM_NEEDS_TRUST);
  return { kind: 'run', options, console: consoleSettings(pick, env) };
}

/**
 * --group-source and --group-selector, checked as the functions read them; groups from the
 * cluster need the projection's cluster.
 */
function groupSourceOption(
  pick: (flag: string, variable: string) => { value: string; source: string } | undefined,
  options: LocalRuntimeOptions,
): GroupSource | undefined {
  const source = pick('group-source', ROLLOUT_ENV.groupSource);
  const selector = pick('group-selector', ROLLOUT_ENV.groupSelector);
  if (!source && !selector) return undefined;
  let config: RolloutConfig;
  try {
    config = readRolloutConfig({
      ...(source ? { [ROLLOUT_ENV.groupSource]: source.value } : {}),
      ...(selector ? { [ROLLOUT_ENV.groupSelector]: selector.value } : {}),
    });
  } catch (error) {
    const message = (error as Error).message.replace(/^invalid configuration: /, '');
    const named = message
      .replace(ROLLOUT_ENV.groupSource, source?.source ?? '--group-source')
      .replace(ROLLOUT_ENV.groupSelector, selector?.source ?? '--group-selector');
    throw new OptionsError(`invalid ${named}`);
  }
  if (
    config.groupSource.kind === 'cluster' &&
    !(options.project || options.kubeconfig || options.kubeContext)
  ) {
    throw new OptionsError(
      `${source?.source ?? '--group-source'} cluster needs a cluster to sync from: add --project (the kubeconfig kubectl uses), --kubeconfig PATH or --context NAME`,
    );
  }
  return config.groupSource;
}

/**
 * Fail closed (DESIGN "Defaults fail closed"): IAM mode requires instance identity documents.
 * No EC2 signs one locally, so AWS's certificates alone would refuse every agent off EC2;
 * the operator says which it is to be instead of getting documents made optional silently.
 */
export const IAM_NEEDS_TRUST =
  "--auth-mode iam requires EC2 instance identity documents: pass --instance-identity-certs <pem file> (the certificates they are signed by; tests sign with their own key), --instance-attestation required (AWS's certificates: agents on EC2 only), or --instance-attestation optional to accept agents that send none (as the agent with --no-imds)";

function instanceAttestation(
  given: { value: string; source: string } | undefined,
): { mode: 'required' | 'optional'; source: string } | undefined {
  if (!given) return undefined;
  if (given.value !== 'required' && given.value !== 'optional') {
    throw new OptionsError(
      `invalid ${given.source} '${given.value}': must be required or optional`,
    );
  }
  return { mode: given.value, source: given.source };
}

/** --log-format and LOG_LEVEL (Powertools' POWERTOOLS_LOG_LEVEL wins, as in the functions). */
function consoleSettings(
  pick: (flag: string, variable: string) => { value: string; source: string } | undefined,
  env: Record<string, string | undefined>,
): ConsoleSettings {
  const format = pick('log-format', 'REGISTRAR_LOG_FORMAT');
  if (format && format.value !== 'human' && format.value !== 'json') {
    throw new OptionsError(`invalid ${format.source} '${format.value}': must be human or json`);
  }
  const levelSource = ['POWERTOOLS_LOG_LEVEL', 'LOG_LEVEL'].find((name) => env[name]);
  let level: ConsoleSettings['level'] = 'INFO';
  if (levelSource) {
    try {
      level = parseConsoleLevel(env[levelSource] ?? '', levelSource);
    } catch (error) {
      throw new OptionsError((error as Error).message);
    }
  }
  return { format: format?.value === 'json' ? 'json' : 'human', level };
}

/** The callers file: a JSON or YAML list (YAML is a superset of JSON, so one parser reads both). */
function readIamCallers(path: string, source: string): IamCallerCredentials[] {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new OptionsError(`invalid ${source} '${path}': ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw new OptionsError(
      `invalid ${source} '${path}': must list at least one caller: [{accessKeyId, secretAccessKey, arn}]`,
    );
  }
  try {
    validateCallers(parsed as IamCallerCredentials[]);
  } catch (error) {
    throw new OptionsError(`invalid ${source} '${path}': ${(error as Error).message}`);
  }
  return parsed as IamCallerCredentials[];
}

/** Reads an option with a parser whose error says what is wrong; the refusal names the option. */
function parseNamed<T>(given: { value: string; source: string }, parse: (text: string) => T): T {
  try {
    return parse(given.value);
  } catch (error) {
    throw new OptionsError(`invalid ${given.source} '${given.value}': ${(error as Error).message}`);
  }
}

function parsePort(text: string, source: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text.trim()) || port > 65_535) {
    throw new OptionsError(
      `invalid ${source} '${text}': must be a port number from 0 to 65535 (0 picks a free port)`,
    );
  }
  return port;
}

function parsePositiveDuration(text: string, source: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    throw new OptionsError(
      `invalid ${source} '${text}': must be a positive duration such as 500ms, 10s, 5m or 2h`,
    );
  }
  return ms;
}

/**
 * A liveness interval too short for the maximum connection age cannot work: each sweep would
 * read the sweep index once per interval of the 1.5 x age stale window (1 s with 2 h: 10,800
 * reads a run, which never finishes). Refused here, naming the flags, before anything starts.
 */
function checkLivenessInterval(
  options: LocalRuntimeOptions,
  pick: (flag: string, variable: string) => { value: string; source: string } | undefined,
): void {
  const interval = options.livenessIntervalMs;
  if (interval === undefined) return;
  const age = options.maxConnectionAgeMs ?? parseDuration(DEFAULTS.maxConnectionAge) ?? 0;
  const minimum = minLivenessIntervalMs(age);
  if (interval >= minimum) return;
  const given = pick('liveness-interval', ENV.livenessInterval);
  const ageSource = pick('max-connection-age', ENV.maxConnectionAge)?.source ?? 'the default';
  throw new OptionsError(
    `invalid ${given?.source ?? '--liveness-interval'} '${given?.value ?? formatDuration(interval)}': must be at least ${formatDuration(minimum)} with a maximum connection age of ${formatDuration(age)} (${ageSource}): each sweep reads the sweep index once per interval of the ${formatDuration(1.5 * age)} stale window, at most ${MAX_LIVENESS_WINDOWS} times; use a longer interval or a shorter --max-connection-age`,
  );
}
