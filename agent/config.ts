import { isIP } from 'node:net';
import { z } from 'zod';
import { parseDuration } from '../lib/domain/duration.ts';
import {
  AgentConfigError,
  type Layer,
  mergeLayers,
  readEnv,
  readFile,
  readFlags,
} from './config-sources.ts';
import type { LogFormat } from './logger.ts';

export { AgentConfigError } from './config-sources.ts';

/** How the agent proves who it is when it connects. */
export type AgentAuth =
  /** A join token, sent as `Authorization: Bearer`; the file is re-read on every connect. */
  | { mode: 'token'; token?: string; tokenFile?: string }
  /** SigV4 with the instance profile; region from here, else the URL, else IMDS. */
  | { mode: 'iam'; region?: string };

export interface AgentTiming {
  /** API Gateway closes a connection idle for 10 min; 5 min keeps a wide margin. */
  pingIntervalMs: number;
  /** API Gateway's hard limit (2 h); the agent rotates at a jittered point before it. */
  maxConnectionAgeMs: number;
  /** Upgrade (and $connect) must finish within this. */
  connectTimeoutMs: number;
  /** A health, describe or ping without a reply within this is sent again / fails. */
  ackTimeoutMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** After a refusal (400/401/403/404/409) retrying soon cannot help: wait longer. */
  refusalBackoffMs: number;
  refusalBackoffCapMs: number;
  /** A connection that lived this long resets the backoff; one that died sooner does not. */
  stableAfterMs: number;
  /** Multiplies the probe's seconds; below 1 only for tests and the benchmark. */
  probeTimeScale: number;
}

export interface AgentConfig {
  url: string;
  group: string;
  namespace: string;
  network?: string;
  labels: Record<string, string>;
  auth: AgentAuth;
  /** Overrides discovery; the first is the entry's address. */
  ips: string[];
  locality?: string;
  imds: { enabled: boolean; url: string; timeoutMs: number };
  logFormat: LogFormat;
  debug: boolean;
  timing: AgentTiming;
}

export const DEFAULT_TIMING: Readonly<AgentTiming> = Object.freeze({
  pingIntervalMs: 5 * 60_000,
  maxConnectionAgeMs: 2 * 3_600_000,
  connectTimeoutMs: 10_000,
  ackTimeoutMs: 10_000,
  backoffBaseMs: 1_000,
  backoffCapMs: 60_000,
  refusalBackoffMs: 30_000,
  refusalBackoffCapMs: 10 * 60_000,
  stableAfterMs: 60_000,
  probeTimeScale: 1,
});

export const DEFAULT_IMDS_URL = 'http://169.254.169.254';

// Kubernetes label syntax: optional DNS prefix, name of at most 63 characters.
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const DNS_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

const duration = z.union([z.number().positive(), z.string()]).transform((value, ctx) => {
  const ms = typeof value === 'number' ? value : parseDuration(value);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a positive duration such as 500ms, 10s or 5m, got '${value}'`,
    });
    return z.NEVER;
  }
  return ms;
});

const labels = z
  .union([
    z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    z.array(z.string()),
  ])
  .transform((value, ctx) => {
    const pairs = Array.isArray(value)
      ? value.map((item) => {
          const at = item.indexOf('=');
          return at < 0 ? [item, undefined] : [item.slice(0, at), item.slice(at + 1)];
        })
      : Object.entries(value).map(([key, item]) => [key, String(item)]);
    const result: Record<string, string> = {};
    for (const [key, item] of pairs) {
      if (item === undefined) {
        ctx.addIssue({ code: 'custom', message: `label '${key}' must be written key=value` });
      } else if (!LABEL_KEY.test(key ?? '')) {
        ctx.addIssue({
          code: 'custom',
          message: `label key '${key}' is not a valid Kubernetes label key`,
        });
      } else if (!LABEL_VALUE.test(item)) {
        ctx.addIssue({
          code: 'custom',
          message: `label value '${item}' of '${key}' is not a valid label value (at most 63 of [A-Za-z0-9_.-])`,
        });
      } else {
        result[key as string] = item;
      }
    }
    return result;
  });

const ipList = z
  .union([z.string(), z.array(z.string())])
  .transform((value) => (Array.isArray(value) ? value : [value]))
  .pipe(
    z.array(
      z.string().refine((ip) => isIP(ip) !== 0, {
        error: (issue) => `'${issue.input}' is not an IPv4 or IPv6 address`,
      }),
    ),
  );

const wsUrl = z.string().refine((text) => /^wss?:\/\/[^/?#]+/.test(text) && URL.canParse(text), {
  error: (issue) =>
    `must be a ws:// or wss:// URL such as wss://abc123.execute-api.us-east-1.amazonaws.com/prod, got '${issue.input}'`,
});

const name = (what: string) =>
  z.string({ error: `is required: the ${what}` }).regex(DNS_NAME, {
    error: (issue) =>
      `'${issue.input}' is not a valid ${what} name (lower case letters, digits, '-' and '.')`,
  });

const schema = z.object({
  url: z
    .string({ error: 'is required: the registrar WebSocket URL (--url or REGISTRAR_AGENT_URL)' })
    .pipe(wsUrl),
  group: name('WorkloadGroup'),
  namespace: name('namespace'),
  network: z.string().min(1).optional(),
  labels: labels.default({}),
  ip: ipList.default([]),
  locality: z
    .string()
    .regex(/^[^/\s]+(\/[^/\s]+){0,2}$/, {
      error: (issue) => `'${issue.input}' must be region[/zone[/subzone]]`,
    })
    .optional(),
  auth: z
    .object({
      mode: z
        .enum(['token', 'iam'], {
          error: (issue) => `must be 'token' or 'iam', got '${issue.input}'`,
        })
        .default('token'),
      token: z.string().min(1).optional(),
      tokenFile: z.string().min(1).optional(),
      region: z.string().min(1).optional(),
    })
    .default({ mode: 'token' }),
  logFormat: z
    .enum(['text', 'json'], { error: (issue) => `must be 'text' or 'json', got '${issue.input}'` })
    .default('text'),
  debug: z.boolean().default(false),
  imds: z
    .object({
      enabled: z.boolean().default(true),
      url: z.url().default(DEFAULT_IMDS_URL),
      timeout: duration.default(1_000),
    })
    .default({ enabled: true, url: DEFAULT_IMDS_URL, timeout: 1_000 }),
  timing: z
    .object({
      pingInterval: duration.optional(),
      maxConnectionAge: duration.optional(),
      connectTimeout: duration.optional(),
      ackTimeout: duration.optional(),
      backoffBase: duration.optional(),
      backoffCap: duration.optional(),
      refusalBackoff: duration.optional(),
      refusalBackoffCap: duration.optional(),
      stableAfter: duration.optional(),
      probeTimeScale: z.coerce.number().positive().max(1).optional(),
    })
    .default({}),
});

/** Reads flags, environment and the optional YAML file; throws AgentConfigError naming the source. */
export function loadAgentConfig(
  argv: string[],
  env: Record<string, string | undefined>,
): AgentConfig | 'help' {
  const flags = readFlags(argv);
  if (flags.help) return 'help';
  const file = flags.configFile ?? env.REGISTRAR_AGENT_CONFIG;
  const layers = [file === undefined ? undefined : readFile(file), readEnv(env), flags.layer];
  return validateAgentConfig(
    mergeLayers(layers.filter((layer): layer is Layer => layer !== undefined)),
  );
}

export function validateAgentConfig(layer: Layer): AgentConfig {
  const parsed = schema.safeParse(layer.values);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const key = issue.path.map(String).join('.');
      const head = String(issue.path[0] ?? '');
      const source = layer.sources[key] ?? layer.sources[head];
      return `${key || 'config'}${source && source !== key ? ` (from ${source})` : ''}: ${issue.message}`;
    });
    throw new AgentConfigError(`invalid agent configuration: ${problems.join('; ')}`);
  }
  const v = parsed.data;
  if (v.auth.mode === 'token' && v.auth.token === undefined && v.auth.tokenFile === undefined) {
    throw new AgentConfigError(
      'token mode needs a join token: set REGISTRAR_AGENT_TOKEN or --token-file <path> (create one with registrar token create), or use --auth iam',
    );
  }
  const t = v.timing;
  const timing: AgentTiming = {
    pingIntervalMs: t.pingInterval ?? DEFAULT_TIMING.pingIntervalMs,
    maxConnectionAgeMs: t.maxConnectionAge ?? DEFAULT_TIMING.maxConnectionAgeMs,
    connectTimeoutMs: t.connectTimeout ?? DEFAULT_TIMING.connectTimeoutMs,
    ackTimeoutMs: t.ackTimeout ?? DEFAULT_TIMING.ackTimeoutMs,
    backoffBaseMs: t.backoffBase ?? DEFAULT_TIMING.backoffBaseMs,
    backoffCapMs: t.backoffCap ?? DEFAULT_TIMING.backoffCapMs,
    refusalBackoffMs: t.refusalBackoff ?? DEFAULT_TIMING.refusalBackoffMs,
    refusalBackoffCapMs:
      t.refusalBackoffCap ?? Math.max(DEFAULT_TIMING.refusalBackoffCapMs, t.refusalBackoff ?? 0),
    stableAfterMs: t.stableAfter ?? DEFAULT_TIMING.stableAfterMs,
    probeTimeScale: t.probeTimeScale ?? DEFAULT_TIMING.probeTimeScale,
  };
  const auth: AgentAuth =
    v.auth.mode === 'iam'
      ? { mode: 'iam', ...(v.auth.region ? { region: v.auth.region } : {}) }
      : {
          mode: 'token',
          ...(v.auth.token ? { token: v.auth.token } : {}),
          ...(v.auth.tokenFile ? { tokenFile: v.auth.tokenFile } : {}),
        };
  return {
    url: v.url,
    group: v.group,
    namespace: v.namespace,
    ...(v.network ? { network: v.network } : {}),
    labels: v.labels,
    auth,
    ips: v.ip,
    ...(v.locality ? { locality: v.locality } : {}),
    imds: { enabled: v.imds.enabled, url: v.imds.url, timeoutMs: v.imds.timeout },
    logFormat: v.logFormat,
    debug: v.debug,
    timing,
  };
}

export const USAGE = `usage: registrar-agent --url <wss://...> --group <name> --namespace <ns> [options]

registers this VM as a WorkloadEntry and reports its health (see docs/agent.md)

  --config <file>            YAML file with the settings below (REGISTRAR_AGENT_CONFIG)
  --url <url>                registrar WebSocket URL (REGISTRAR_AGENT_URL)
  --group <name>             WorkloadGroup to join (REGISTRAR_AGENT_GROUP)
  --namespace <ns>           its namespace (REGISTRAR_AGENT_NAMESPACE)
  --network <name>           mesh network (REGISTRAR_AGENT_NETWORK)
  --label <k=v>              extra label, repeatable (REGISTRAR_AGENT_LABELS=k=v,k=v)
  --auth token|iam           token: join token; iam: SigV4 with the instance profile
  --token-file <path>        join token file, re-read on every connect (REGISTRAR_AGENT_TOKEN_FILE);
                             or the token itself in REGISTRAR_AGENT_TOKEN
  --region <region>          region for IAM signing when the URL does not show it
  --ip <addr>                address(es) to register instead of IMDS discovery, repeatable
  --locality <r/z[/s]>       locality instead of IMDS discovery
  --no-imds                  do not ask the EC2 instance metadata service
  --log-format text|json     log lines as text (default) or JSON
  --debug                    log every message
  --ping-interval <d>        keepalive (default 5m), --max-connection-age <d> (default 2h)
  -h, --help                 this text`;
