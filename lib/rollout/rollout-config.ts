import { ConfigError } from '../config.ts';
import * as check from '../config-checks.ts';
import { GROUP_SOURCES, type GroupSource } from '../domain/group-source.ts';

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

/**
 * Each variable's check, in the order problems are reported (plain checks, as lib/config.ts:
 * the rollout function's bundle carries no validation library).
 */
const CHECKS: Record<string, check.Check<unknown>> = {
  [ROLLOUT_ENV.groupSource]: check.oneOf(GROUP_SOURCES, "must be 'registry' or 'cluster'"),
  [ROLLOUT_ENV.groupSelector]: (text) =>
    LABEL_SELECTOR.test(text)
      ? text
      : new check.Invalid('must be a Kubernetes label selector such as app=web,tier!=canary'),
  [ROLLOUT_ENV.writesPerSecond]: (text) => {
    const n = Number(text);
    return Number.isFinite(n) && n > 0 && n <= 1000
      ? n
      : new check.Invalid(
          "must be a number of writes per second above 0 and at most 1000 (a partition key's limit)",
        );
  },
  [ROLLOUT_ENV.runTime]: check.positiveDuration,
  [ROLLOUT_ENV.recheck]: check.positiveDuration,
};

const FALLBACKS: Record<string, string> = {
  [ROLLOUT_ENV.groupSource]: 'registry',
  [ROLLOUT_ENV.writesPerSecond]: ROLLOUT_DEFAULTS.writesPerSecond,
  [ROLLOUT_ENV.runTime]: ROLLOUT_DEFAULTS.runTime,
  [ROLLOUT_ENV.recheck]: ROLLOUT_DEFAULTS.recheck,
};

/** Throws ConfigError naming the variable and the value. */
export function readRolloutConfig(env: Record<string, string | undefined>): RolloutConfig {
  const problems: string[] = [];
  const v: Record<string, unknown> = {};
  for (const [variable, run] of Object.entries(CHECKS)) {
    // An empty variable is an unset one.
    const given = env[variable] === '' ? undefined : env[variable];
    const text = given ?? FALLBACKS[variable];
    if (text === undefined) continue;
    const result = run(text);
    if (result instanceof check.Invalid) {
      problems.push(`${variable} (value '${env[variable]}'): ${result.message}`);
    } else {
      v[variable] = result;
    }
  }
  if (problems.length > 0) {
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const selector = v[ROLLOUT_ENV.groupSelector] as string | undefined;
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
    writesPerSecond: v[ROLLOUT_ENV.writesPerSecond] as number,
    runTimeMs: v[ROLLOUT_ENV.runTime] as number,
    recheckMs: v[ROLLOUT_ENV.recheck] as number,
  };
}
