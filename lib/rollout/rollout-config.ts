import * as z from 'zod';
import { ConfigError, positiveDuration } from '../config.ts';
import { GROUP_SOURCES, type GroupSource } from './group-source.ts';

/** The rollout function's and the group sync's settings, read once from the environment. */
export interface RolloutConfig {
  groupSource: GroupSource;
  /** Entry writes per second of one run, all groups together. */
  writesPerSecond: number;
  /** How long one run goes on at most (it also ends before its invocation's deadline). */
  runTimeMs: number;
  /** Entries left for a recheck (waiting for a reconnect, losing races) are looked at again after this. */
  recheckMs: number;
}

export const ROLLOUT_ENV = {
  groupSource: 'REGISTRAR_GROUP_SOURCE',
  groupSelector: 'REGISTRAR_GROUP_SELECTOR',
  writesPerSecond: 'REGISTRAR_ROLLOUT_WRITES_PER_SECOND',
  runTime: 'REGISTRAR_ROLLOUT_RUN_TIME',
  recheck: 'REGISTRAR_ROLLOUT_RECHECK',
} as const;

export const ROLLOUT_DEFAULTS = {
  // A namespace's entries share one partition key (1,000 writes/s); 400/s leaves the rest to
  // the fleet's own connects and health reports there.
  writesPerSecond: '400',
  // Two schedule periods: a 20,000-entry rollout at the default pace (4 steps of 5,000, 10 s
  // apart, 12.5 s to write each) finishes inside one run.
  runTime: '2m',
  recheck: '5m',
} as const;

/**
 * A Kubernetes label selector as the API server takes it (`app=web,tier!=canary`, `env in
 * (a,b)`, `!legacy`): only its characters are checked here; the API server judges the rest,
 * and the group sync reports its refusal.
 */
export const LABEL_SELECTOR = /^[A-Za-z0-9_.\-/=!,() ]+$/;

const schema = z.object({
  [ROLLOUT_ENV.groupSource]: z
    .enum(GROUP_SOURCES, { message: "must be 'registry' or 'cluster'" })
    .default('registry'),
  [ROLLOUT_ENV.groupSelector]: z
    .string()
    .regex(LABEL_SELECTOR, 'must be a Kubernetes label selector such as app=web,tier!=canary')
    .optional(),
  [ROLLOUT_ENV.writesPerSecond]: z
    .string()
    .default(ROLLOUT_DEFAULTS.writesPerSecond)
    .transform(Number)
    .refine((n) => Number.isFinite(n) && n > 0 && n <= 1000, {
      message:
        "must be a number of writes per second above 0 and at most 1000 (a partition key's limit)",
    }),
  [ROLLOUT_ENV.runTime]: positiveDuration.prefault(ROLLOUT_DEFAULTS.runTime),
  [ROLLOUT_ENV.recheck]: positiveDuration.prefault(ROLLOUT_DEFAULTS.recheck),
});

/** Throws ConfigError naming the variable and the value. */
export function readRolloutConfig(env: Record<string, string | undefined>): RolloutConfig {
  const present = Object.fromEntries(
    Object.values(ROLLOUT_ENV)
      .filter((name) => env[name] !== undefined && env[name] !== '')
      .map((name) => [name, env[name]]),
  );
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0]);
      return `${variable} (value '${env[variable]}'): ${issue.message}`;
    });
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const v = parsed.data;
  const selector = v[ROLLOUT_ENV.groupSelector];
  if (selector !== undefined && v[ROLLOUT_ENV.groupSource] !== 'cluster') {
    throw new ConfigError(
      `invalid configuration: ${ROLLOUT_ENV.groupSelector} (value '${selector}'): applies only with ${ROLLOUT_ENV.groupSource}=cluster`,
    );
  }
  return {
    groupSource:
      v[ROLLOUT_ENV.groupSource] === 'cluster'
        ? { kind: 'cluster', ...(selector ? { selector } : {}) }
        : { kind: 'registry' },
    writesPerSecond: v[ROLLOUT_ENV.writesPerSecond],
    runTimeMs: v[ROLLOUT_ENV.runTime],
    recheckMs: v[ROLLOUT_ENV.recheck],
  };
}
