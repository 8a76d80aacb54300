import * as z from 'zod';
import { DEFAULTS, ENV } from './config-env.ts';
import { type AgentSkewPolicy, agentSkewPolicy, parseMinorLine } from './domain/agent-skew.ts';
import type { DisruptionPolicy } from './domain/disruption.ts';
import { formatDuration, parseDuration } from './domain/duration.ts';
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
}

/** The most liveness windows (index reads per shard) one sweep may make: see readConfig. */
export const MAX_LIVENESS_WINDOWS = 360;

/** The shortest liveness interval for a maximum connection age: 1.5 x age / 360, whole seconds. */
export function minLivenessIntervalMs(maxConnectionAgeMs: number): number {
  return Math.ceil((1.5 * maxConnectionAgeMs) / MAX_LIVENESS_WINDOWS / 1000) * 1000;
}

// Kept apart so the CLI reads the names without loading zod; re-exported for everyone else.
export { DEFAULTS, ENV };

export class ConfigError extends Error {}

/** A positive duration (`500ms`, `10s`, `5m`, `2h`); 0 or negative is an error. */
export const positiveDuration = z.string().transform((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a positive duration such as 500ms, 10s, 5m or 2h, got '${text}'`,
    });
    return z.NEVER;
  }
  return ms;
});

const positiveInteger = z.string().transform((text, ctx) => {
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) {
    ctx.addIssue({ code: 'custom', message: `must be a positive integer, got '${text}'` });
    return z.NEVER;
  }
  return value;
});

/** A share strictly between 0 and 1, written `55%` or `0.55`. */
export const shareOption = z.string().transform((text, ctx) => {
  const trimmed = text.trim();
  const value = trimmed.endsWith('%') ? Number(trimmed.slice(0, -1)) / 100 : Number(trimmed);
  if (trimmed === '' || !Number.isFinite(value) || value <= 0 || value >= 1) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a share between 0 and 1 (exclusive) such as 55% or 0.55, got '${text}'`,
    });
    return z.NEVER;
  }
  return value;
});

/** A positive rate such as `0.1` (fractions allowed: one deletion every 10 s). */
export const positiveRate = z.string().transform((text, ctx) => {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a positive number of deletions per second such as 0.1, got '${text}'`,
    });
    return z.NEVER;
  }
  return value;
});

/** The EC2 states the registrar may act on: the ones after which a VM is gone or going. */
export const EC2_REMOVAL_STATES = ['shutting-down', 'terminated', 'stopping', 'stopped'] as const;

/** A comma-separated list of EC2 states, each one of EC2_REMOVAL_STATES. */
export const ec2StatesOption = z.string().transform((text, ctx) => {
  const states = text
    .split(',')
    .map((state) => state.trim())
    .filter(Boolean);
  const unknown = states.filter((s) => !(EC2_REMOVAL_STATES as readonly string[]).includes(s));
  if (states.length === 0 || unknown.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a comma-separated list of ${EC2_REMOVAL_STATES.join(', ')}, got '${text}'`,
    });
    return z.NEVER;
  }
  return [...new Set(states)];
});

/** A comma-separated list of AWS Region names (`eu-west-1,us-east-1`). */
export const regionListOption = z.string().transform((text, ctx) => {
  const regions = [
    ...new Set(
      text
        .split(',')
        .map((region) => region.trim())
        .filter(Boolean),
    ),
  ];
  const bad = regions.filter((region) => !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region));
  if (regions.length === 0 || bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a comma-separated list of AWS Regions such as eu-west-1,us-east-1, got '${text}'`,
    });
    return z.NEVER;
  }
  return regions;
});

const schema = z.object({
  [ENV.tableName]: z.string().min(1, 'is required: the DynamoDB table holding the registry'),
  [ENV.dynamoDbEndpoint]: z.url().optional(),
  [ENV.region]: z.string().default(DEFAULTS.region),
  [ENV.gracePeriod]: positiveDuration.prefault(DEFAULTS.gracePeriod),
  [ENV.maxConnectionAge]: positiveDuration.prefault(DEFAULTS.maxConnectionAge),
  [ENV.sweepMaxDeletes]: positiveInteger.prefault(String(DEFAULTS.sweepMaxDeletes)),
  [ENV.sweepDeletesPerSecond]: positiveInteger.prefault(String(DEFAULTS.sweepDeletesPerSecond)),
  [ENV.sweepInterval]: positiveDuration.prefault(DEFAULTS.sweepInterval),
  [ENV.livenessInterval]: positiveDuration.optional(),
  [ENV.connectionsUrl]: z.url().optional(),
  [ENV.connectSettle]: positiveDuration.prefault(DEFAULTS.connectSettle),
  [ENV.controller]: z.string().min(1).default(DEFAULTS.controller),
  [ENV.authMode]: z.enum(['token', 'iam']).default('token'),
  [ENV.disruptionThreshold]: shareOption.prefault(DEFAULTS.disruptionThreshold),
  [ENV.disruptionWindow]: positiveDuration.prefault(DEFAULTS.disruptionWindow),
  [ENV.secondaryDeletesPerSecond]: positiveRate.prefault(
    String(DEFAULTS.secondaryDeletesPerSecond),
  ),
  [ENV.holdBound]: positiveDuration.prefault(DEFAULTS.holdBound),
  [ENV.ec2States]: ec2StatesOption.prefault(DEFAULTS.ec2States),
  [ENV.instanceAttestation]: z
    .enum(['required', 'optional'], { message: "must be 'required' or 'optional'" })
    .default('required'),
  [ENV.instanceIdentityCerts]: z.string().optional(),
  [ENV.namespaceSettingsCache]: positiveDuration.prefault(DEFAULTS.namespaceSettingsCache),
  [ENV.instanceIdentityRegions]: regionListOption.optional(),
  [ENV.oldestAgentVersion]: z
    .string()
    .transform((text, ctx) => {
      const line = parseMinorLine(text);
      if (!line) {
        ctx.addIssue({ code: 'custom', message: 'must be MAJOR.MINOR, such as 0.1' });
        return z.NEVER;
      }
      return line;
    })
    .optional(),
});

/** Reads and validates the configuration; throws ConfigError naming the variable and value. */
export function readConfig(env: Record<string, string | undefined>): Readonly<Config> {
  const defined = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = schema.safeParse(defined);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0] ?? 'environment');
      const value = env[variable];
      const shown = value === undefined ? '' : ` (value '${value}')`;
      return `${variable}${shown}: ${issue.message}`;
    });
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const v = parsed.data;
  const maxConnectionAgeMs = v[ENV.maxConnectionAge];
  const sweepIntervalMs = v[ENV.sweepInterval];
  const livenessIntervalMs =
    v[ENV.livenessInterval] ??
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
  const secondary = v[ENV.secondaryDeletesPerSecond];
  if (secondary >= v[ENV.sweepDeletesPerSecond]) {
    throw new ConfigError(
      `invalid configuration: ${ENV.secondaryDeletesPerSecond} (value '${env[ENV.secondaryDeletesPerSecond] ?? secondary}'): must be lower than ${ENV.sweepDeletesPerSecond} (${v[ENV.sweepDeletesPerSecond]}): it is the slowed rate of a disrupted zone`,
    );
  }
  return Object.freeze({
    tableName: v[ENV.tableName],
    dynamoDbEndpoint: v[ENV.dynamoDbEndpoint],
    region: v[ENV.region],
    sweep: Object.freeze({
      gracePeriodMs: v[ENV.gracePeriod],
      maxConnectionAgeMs,
      sweepIntervalMs,
      livenessIntervalMs,
      maxDeletesPerRun: v[ENV.sweepMaxDeletes],
      deletesPerSecond: v[ENV.sweepDeletesPerSecond],
      failStatic: Object.freeze({
        threshold: v[ENV.disruptionThreshold],
        windowMs: v[ENV.disruptionWindow],
        secondaryDeletesPerSecond: v[ENV.secondaryDeletesPerSecond],
        holdBoundMs: v[ENV.holdBound],
      }),
    }),
    connectionsUrl: v[ENV.connectionsUrl],
    connectSettleMs: v[ENV.connectSettle],
    controller: v[ENV.controller],
    ec2States: Object.freeze(v[ENV.ec2States]),
    authMode: v[ENV.authMode],
    instanceAttestation: v[ENV.instanceAttestation],
    instanceIdentityCerts: v[ENV.instanceIdentityCerts],
    namespaceSettingsCacheMs: v[ENV.namespaceSettingsCache],
    instanceIdentityRegions: Object.freeze(v[ENV.instanceIdentityRegions] ?? [v[ENV.region]]),
    agentSkew: Object.freeze(agentSkewPolicy(RELEASE, v[ENV.oldestAgentVersion])),
  });
}

/** For logs at start: the effective policy in the form it is configured. */
export function describeSweepPolicy(config: Config): string {
  const { sweep } = config;
  return `grace period ${formatDuration(sweep.gracePeriodMs)}, max connection age ${formatDuration(sweep.maxConnectionAgeMs)}, liveness checks every ${formatDuration(sweep.livenessIntervalMs)}`;
}
