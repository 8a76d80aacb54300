import * as check from './config-checks.ts';
import { DEFAULTS, ENV } from './config-env.ts';
import { type AgentSkewPolicy, agentSkewPolicy } from './domain/agent-skew.ts';
import type { DisruptionPolicy } from './domain/disruption.ts';
import { formatDuration, parseDuration } from './domain/duration.ts';
import { MAX_HEARTBEAT_LANES } from './domain/heartbeat-lanes.ts';
import type { LivenessPolicy, SweepPolicy } from './domain/sweep-policy.ts';
import { RELEASE } from './release.ts';

/**
 * Configuration, read once from the environment at start. A bad value fails here, naming the
 * variable and the value, instead of surfacing later as odd behaviour (a zero grace period
 * would mean "delete every disconnected entry at once").
 */
export interface Config {
  tableName: string;
  /** Set for the local runtime and tests (dynalite, DynamoDB Local); unset on AWS. */
  dynamoDbEndpoint: string | undefined;
  region: string;
  sweep: SweepPolicy &
    LivenessPolicy & {
      /** Most entries one sweeper run deletes. */
      maxDeletesPerRun: number;
      /** Deletions per second, so a mass expiry does not flood the mesh with removals. */
      deletesPerSecond: number;
      /** Fail static: when deletions slow down or stop (lib/domain/disruption.ts). */
      failStatic: DisruptionPolicy;
    };
  /**
   * API Gateway's management endpoint (`https://{api}.execute-api.{region}.amazonaws.com/
   * {stage}`), where liveness checks ask whether a holder connection still exists. Unset: no
   * liveness checks, and a lost `$disconnect` is caught only by the stale rule.
   */
  connectionsUrl: string | undefined;
  /**
   * A holder younger than this is never dropped by a liveness check: API Gateway answers 410
   * for a connection whose `$connect` has not returned yet (its integration timeout is 29 s).
   */
  connectSettleMs: number;
  /** The `istio.io/workloadController` value written on connect. */
  controller: string;
  /** The EC2 instance states whose entries are removed at once (the EC2 state-change rule). */
  ec2States: readonly string[];
  authMode: 'token' | 'iam';
  /**
   * IAM mode: whether a connect must carry a verified EC2 instance identity document
   * (lib/auth/instance-attestation.ts). Default `required` (fail closed: a deployment that
   * does not set the variable must not accept a role's word for its address); `optional` only
   * when the operator says so.
   */
  instanceAttestation: 'required' | 'optional';
  /**
   * The certificates instance identity documents are verified against: PEM text or the path of
   * a PEM file; unset, the ones shipped in lib/auth/aws-instance-identity-certs.ts. Loaded by
   * the wiring (lib/dependencies.ts), which names this variable when it fails.
   */
  instanceIdentityCerts: string | undefined;
  /** How long $connect trusts a namespace's settings (quotas, networks, ranges) once read. */
  namespaceSettingsCacheMs: number;
  /**
   * The Regions whose AWS certificate documents are verified against (when
   * instanceIdentityCerts is unset). Default: the Region the function runs in (AWS_REGION);
   * the stack adds the ones its `instanceIdentityRegions` option names. A list of names, not
   * certificates: Lambda's 4 KB of environment holds two certificates at most, and the
   * certificates are bundled with the code.
   */
  instanceIdentityRegions: readonly string[];
  /**
   * Which agent versions `$connect` accepts (lib/domain/agent-skew.ts): by default this
   * release's minor line and the two before it; `REGISTRAR_OLDEST_AGENT_VERSION` (`0.1`) moves
   * the floor, down for a fleet that lags, up to turn away a release with a known fault.
   */
  agentSkew: AgentSkewPolicy;
  /**
   * Sweeper invocations that share the heartbeat groups' checks (lib/domain/heartbeat-lanes.ts):
   * lane 0 is the scheduled sweep, lanes 1 .. n-1 invocations of their own. 1 to 16.
   */
  heartbeatLanes: number;
}

/** The most liveness windows (index reads per shard) one sweep may make: see readConfig. */
export const MAX_LIVENESS_WINDOWS = 360;

/** The shortest liveness interval for a maximum connection age: 1.5 x age / 360, whole seconds. */
export function minLivenessIntervalMs(maxConnectionAgeMs: number): number {
  return Math.ceil((1.5 * maxConnectionAgeMs) / MAX_LIVENESS_WINDOWS / 1000) * 1000;
}

// Kept apart so the CLI reads the names alone; re-exported for everyone else.
export { DEFAULTS, ENV };

export class ConfigError extends Error {}

export { EC2_REMOVAL_STATES } from './config-checks.ts';

/**
 * Each variable, its check, and its default: `prefault` is a text the check parses (as if the
 * variable said it), `fallback` the value itself. In this order problems are reported.
 */
const FIELDS = {
  tableName: { variable: ENV.tableName, check: check.anyText, required: true },
  dynamoDbEndpoint: { variable: ENV.dynamoDbEndpoint, check: check.url },
  region: { variable: ENV.region, check: check.anyText, fallback: DEFAULTS.region },
  gracePeriod: {
    variable: ENV.gracePeriod,
    check: check.positiveDuration,
    prefault: DEFAULTS.gracePeriod,
  },
  maxConnectionAge: {
    variable: ENV.maxConnectionAge,
    check: check.positiveDuration,
    prefault: DEFAULTS.maxConnectionAge,
  },
  sweepMaxDeletes: {
    variable: ENV.sweepMaxDeletes,
    check: check.positiveInteger,
    prefault: String(DEFAULTS.sweepMaxDeletes),
  },
  sweepDeletesPerSecond: {
    variable: ENV.sweepDeletesPerSecond,
    check: check.positiveInteger,
    prefault: String(DEFAULTS.sweepDeletesPerSecond),
  },
  sweepInterval: {
    variable: ENV.sweepInterval,
    check: check.positiveDuration,
    prefault: DEFAULTS.sweepInterval,
  },
  livenessInterval: { variable: ENV.livenessInterval, check: check.positiveDuration },
  connectionsUrl: { variable: ENV.connectionsUrl, check: check.url },
  connectSettle: {
    variable: ENV.connectSettle,
    check: check.positiveDuration,
    prefault: DEFAULTS.connectSettle,
  },
  controller: { variable: ENV.controller, check: check.anyText, fallback: DEFAULTS.controller },
  authMode: {
    variable: ENV.authMode,
    check: check.oneOf(['token', 'iam']),
    fallback: 'token',
  },
  disruptionThreshold: {
    variable: ENV.disruptionThreshold,
    check: check.share,
    prefault: DEFAULTS.disruptionThreshold,
  },
  disruptionWindow: {
    variable: ENV.disruptionWindow,
    check: check.positiveDuration,
    prefault: DEFAULTS.disruptionWindow,
  },
  secondaryDeletesPerSecond: {
    variable: ENV.secondaryDeletesPerSecond,
    check: check.positiveRate,
    prefault: String(DEFAULTS.secondaryDeletesPerSecond),
  },
  holdBound: {
    variable: ENV.holdBound,
    check: check.positiveDuration,
    prefault: DEFAULTS.holdBound,
  },
  ec2States: { variable: ENV.ec2States, check: check.ec2States, prefault: DEFAULTS.ec2States },
  instanceAttestation: {
    variable: ENV.instanceAttestation,
    check: check.oneOf(['required', 'optional'], "must be 'required' or 'optional'"),
    fallback: 'required',
  },
  instanceIdentityCerts: { variable: ENV.instanceIdentityCerts, check: check.anyText },
  namespaceSettingsCache: {
    variable: ENV.namespaceSettingsCache,
    check: check.positiveDuration,
    prefault: DEFAULTS.namespaceSettingsCache,
  },
  instanceIdentityRegions: { variable: ENV.instanceIdentityRegions, check: check.regionList },
  oldestAgentVersion: { variable: ENV.oldestAgentVersion, check: check.minorLine },
  heartbeatLanes: {
    variable: ENV.heartbeatLanes,
    check: check.wholeNumberIn(1, MAX_HEARTBEAT_LANES),
    prefault: String(DEFAULTS.heartbeatLanes),
  },
} as const;

type Fields = typeof FIELDS;
type Checked<K extends keyof Fields> = Fields[K]['check'] extends check.Check<infer T> ? T : never;
type Values = {
  [K in keyof Fields]: Fields[K] extends
    | { required: true }
    | { prefault: string }
    | { fallback: unknown }
    ? Checked<K>
    : Checked<K> | undefined;
};

/** Every field checked; each problem names its variable and, when set, the value. */
function readFields(env: Record<string, string | undefined>): Values {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(FIELDS) as [string, FieldSpec][]) {
    const raw = env[field.variable];
    // An empty variable is an unset one (a template that leaves a value blank).
    const text = raw === undefined || raw === '' ? field.prefault : raw;
    if (text === undefined) {
      if (field.required) problems.push(`${field.variable}${shown(raw)}: ${MISSING}`);
      values[key] = field.fallback;
      continue;
    }
    const result = field.check(text);
    if (result instanceof check.Invalid)
      problems.push(`${field.variable}${shown(raw)}: ${result.message}`);
    else values[key] = result;
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  return values as Values;
}

interface FieldSpec {
  variable: string;
  check: check.Check<unknown>;
  required?: boolean;
  prefault?: string;
  fallback?: unknown;
}

// The words zod used for a missing string: kept, as operators and tests know them.
const MISSING = 'Invalid input: expected string, received undefined';

function shown(value: string | undefined): string {
  return value === undefined ? '' : ` (value '${value}')`;
}

/** Reads and validates the configuration; throws ConfigError naming the variable and value. */
export function readConfig(env: Record<string, string | undefined>): Readonly<Config> {
  const v = readFields(env);
  const maxConnectionAgeMs = v.maxConnectionAge;
  const sweepIntervalMs = v.sweepInterval;
  const livenessIntervalMs =
    v.livenessInterval ??
    Math.max(
      sweepIntervalMs,
      Math.min(parseDuration(DEFAULTS.livenessInterval) ?? 0, maxConnectionAgeMs / 4),
    );
  // The sweeper checks liveness at most once per run: a shorter interval cannot be kept.
  if (livenessIntervalMs < sweepIntervalMs) {
    throw new ConfigError(
      `invalid configuration: ${ENV.livenessInterval} (value '${env[ENV.livenessInterval]}'): must be at least ${ENV.sweepInterval} (${formatDuration(sweepIntervalMs)}): the sweeper checks liveness once per run`,
    );
  }
  // Each run queries the sweep index once per liveness interval of the stale window (1.5 x the
  // maximum age) and shard: a 1 s interval with the 2 h age made 10,800 windows a run, which
  // never finished and grew without bound.
  const minLiveness = minLivenessIntervalMs(maxConnectionAgeMs);
  if (livenessIntervalMs < minLiveness) {
    throw new ConfigError(
      `invalid configuration: ${ENV.livenessInterval} (value '${env[ENV.livenessInterval] ?? formatDuration(livenessIntervalMs)}'): must be at least ${formatDuration(minLiveness)} with ${ENV.maxConnectionAge} ${formatDuration(maxConnectionAgeMs)}: each sweep reads the index once per interval of the ${formatDuration(1.5 * maxConnectionAgeMs)} stale window, at most ${MAX_LIVENESS_WINDOWS} times`,
    );
  }
  const secondary = v.secondaryDeletesPerSecond;
  if (secondary >= v.sweepDeletesPerSecond) {
    throw new ConfigError(
      `invalid configuration: ${ENV.secondaryDeletesPerSecond} (value '${env[ENV.secondaryDeletesPerSecond] ?? secondary}'): must be lower than ${ENV.sweepDeletesPerSecond} (${v.sweepDeletesPerSecond}): it is the slowed rate of a disrupted zone`,
    );
  }
  return Object.freeze({
    tableName: v.tableName,
    dynamoDbEndpoint: v.dynamoDbEndpoint,
    region: v.region,
    sweep: Object.freeze({
      gracePeriodMs: v.gracePeriod,
      maxConnectionAgeMs,
      sweepIntervalMs,
      livenessIntervalMs,
      maxDeletesPerRun: v.sweepMaxDeletes,
      deletesPerSecond: v.sweepDeletesPerSecond,
      failStatic: Object.freeze({
        threshold: v.disruptionThreshold,
        windowMs: v.disruptionWindow,
        secondaryDeletesPerSecond: v.secondaryDeletesPerSecond,
        holdBoundMs: v.holdBound,
      }),
    }),
    connectionsUrl: v.connectionsUrl,
    connectSettleMs: v.connectSettle,
    controller: v.controller,
    ec2States: Object.freeze(v.ec2States),
    authMode: v.authMode,
    instanceAttestation: v.instanceAttestation,
    instanceIdentityCerts: v.instanceIdentityCerts,
    namespaceSettingsCacheMs: v.namespaceSettingsCache,
    instanceIdentityRegions: Object.freeze(v.instanceIdentityRegions ?? [v.region]),
    agentSkew: Object.freeze(agentSkewPolicy(RELEASE, v.oldestAgentVersion)),
    heartbeatLanes: v.heartbeatLanes,
  });
}

/** For logs at start: the effective policy in the form it is configured. */
export function describeSweepPolicy(config: Config): string {
  const { sweep } = config;
  return `grace period ${formatDuration(sweep.gracePeriodMs)}, max connection age ${formatDuration(sweep.maxConnectionAgeMs)}, liveness checks every ${formatDuration(sweep.livenessIntervalMs)}`;
}
