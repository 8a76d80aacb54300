import { isIP } from 'node:net';
import { z } from 'zod';
import { parseIpAddress } from '../lib/domain/address.ts';
import { formatDuration, parseDuration } from '../lib/domain/duration.ts';
import {
  AgentConfigError,
  type Layer,
  mergeLayers,
  readEnv,
  readFile,
  readFlags,
} from './config-sources.ts';
import type { LogFormat } from './logger.ts';
import {
  type AgentTiming,
  agentUsage,
  DEFAULT_IMDS_URL,
  DEFAULT_TIMING,
  MAX_DRAIN_DELAY_MS,
} from './settings.ts';
import { type SidecarConfig, sidecarConfigSchema, toSidecarConfig } from './sidecar-settings.ts';

export { AgentConfigError } from './config-sources.ts';
export { type AgentTiming, DEFAULT_IMDS_URL, DEFAULT_TIMING } from './settings.ts';

/** How the agent proves who it is when it connects. */
export type AgentAuth =
  /**
   * A join token, sent as `Authorization: Bearer`; the file (which wins) is re-read on every
   * connect. `tokenSource` says where `token` came from (`REGISTRAR_AGENT_TOKEN`, or the
   * config file's path), so advice about a refused token can say where to replace it.
   */
  | { mode: 'token'; token?: string; tokenFile?: string; tokenSource?: string }
  /**
   * SigV4 with the instance profile; region from here, else the URL, else IMDS. The instance
   * identity document and its signature come from these files when given (both), else from
   * IMDSv2 (agent/identity-evidence.ts).
   */
  | { mode: 'iam'; region?: string; identityDocument?: string; identitySignature?: string };

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
  /** The Istio sidecar bootstrap (agent/sidecar-bootstrap.ts); absent or disabled: none. */
  sidecar?: SidecarConfig;
}

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

// A drain delay may be 0 (no drain), unlike the other durations.
const drainDelay = z.union([z.number().min(0), z.string()]).transform((value, ctx) => {
  const ms = typeof value === 'number' ? value : value.trim() === '0' ? 0 : parseDuration(value);
  if (ms === undefined || ms < 0 || ms > MAX_DRAIN_DELAY_MS) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a duration from 0 (no drain) to ${formatDuration(MAX_DRAIN_DELAY_MS)}, such as 10s, got '${value}'`,
    });
    return z.NEVER;
  }
  return ms;
});

const flag = z.boolean({ error: (issue) => `must be true or false, got '${issue.input}'` });

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

/** The raw settings (YAML keys); exported so a test can hold AGENT_SETTINGS to it. */
export const agentConfigSchema = z.object({
  url: z
    .string({ error: 'is required: the registrar WebSocket URL (--url or REGISTRAR_AGENT_URL)' })
    .pipe(wsUrl),
  insecure: flag.default(false),
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
      identityDocument: z.string().min(1).optional(),
      identitySignature: z.string().min(1).optional(),
    })
    .default({ mode: 'token' }),
  logFormat: z
    .enum(['text', 'json'], { error: (issue) => `must be 'text' or 'json', got '${issue.input}'` })
    .default('text'),
  debug: flag.default(false),
  imds: z
    .object({
      enabled: flag.default(true),
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
      missingGroupRetry: duration.optional(),
      stableAfter: duration.optional(),
      probeTimeScale: z.coerce.number().positive().max(1).optional(),
      drainDelay: drainDelay.optional(),
    })
    .default({}),
  sidecar: sidecarConfigSchema,
});

/**
 * Reads flags, environment and the optional YAML file; throws AgentConfigError naming the
 * source. `--help` and `--version` are answered before anything is validated.
 */
export function loadAgentConfig(
  argv: string[],
  env: Record<string, string | undefined>,
): AgentConfig | 'help' | 'version' {
  const flags = readFlags(argv);
  if (flags.help) return 'help';
  if (flags.version) return 'version';
  const file = flags.configFile ?? env.REGISTRAR_AGENT_CONFIG;
  const layers = [file === undefined ? undefined : readFile(file), readEnv(env), flags.layer];
  return validateAgentConfig(
    mergeLayers(layers.filter((layer): layer is Layer => layer !== undefined)),
  );
}

export function validateAgentConfig(layer: Layer): AgentConfig {
  const parsed = agentConfigSchema.safeParse(layer.values);
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
  const clear = clearTextProblem(v.url, v.insecure, layer.sources.url ?? 'url');
  if (clear) throw new AgentConfigError(clear);
  const { identityDocument, identitySignature } = v.auth;
  if ((identityDocument === undefined) !== (identitySignature === undefined)) {
    const [given, missing] =
      identityDocument === undefined
        ? ['--identity-signature', '--identity-document']
        : ['--identity-document', '--identity-signature'];
    throw new AgentConfigError(
      `${given} needs ${missing} too: the registrar checks the document against its signature`,
    );
  }
  if (identityDocument !== undefined && v.auth.mode !== 'iam') {
    throw new AgentConfigError(
      '--identity-document and --identity-signature are used only with --auth iam: a join token needs no instance identity document',
    );
  }
  if (!v.imds.enabled && v.ip.length === 0) {
    const from = layer.sources['imds.enabled'];
    const source =
      from?.startsWith('-') || from?.startsWith('REGISTRAR_')
        ? from
        : `imds.enabled: false${from ? ` in ${from}` : ''}`;
    throw new AgentConfigError(
      `${source} needs --ip <address> (or REGISTRAR_AGENT_IP): without the instance metadata service the agent cannot discover this VM's address`,
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
    missingGroupRetryMs: t.missingGroupRetry ?? DEFAULT_TIMING.missingGroupRetryMs,
    stableAfterMs: t.stableAfter ?? DEFAULT_TIMING.stableAfterMs,
    probeTimeScale: t.probeTimeScale ?? DEFAULT_TIMING.probeTimeScale,
    drainDelayMs: t.drainDelay ?? DEFAULT_TIMING.drainDelayMs,
  };
  const auth: AgentAuth =
    v.auth.mode === 'iam'
      ? {
          mode: 'iam',
          ...(v.auth.region ? { region: v.auth.region } : {}),
          ...(identityDocument && identitySignature ? { identityDocument, identitySignature } : {}),
        }
      : {
          mode: 'token',
          ...(v.auth.token
            ? { token: v.auth.token, tokenSource: layer.sources['auth.token'] ?? 'auth.token' }
            : {}),
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
    sidecar: toSidecarConfig(v.sidecar),
  };
}

/**
 * `ws://` carries the join token (or the SigV4-signed URL and the instance identity document)
 * in clear, and whoever sits in between can answer `describe` with a probe of its choosing,
 * an `exec` probe the agent then runs. Allowed to a loopback address (the local runtime, a
 * TLS-terminating sidecar on the VM itself), elsewhere only with `--insecure`.
 */
function clearTextProblem(url: string, insecure: boolean, source: string): string | undefined {
  const parsed = new URL(url);
  if (parsed.protocol !== 'ws:' || insecure || isLoopbackHost(parsed.hostname)) return undefined;
  return `${source} '${url}' is ws:// to ${parsed.hostname}, which is not a loopback address: the join token or signed request, the instance identity document and the probe the registrar sends would travel in clear; use wss://, or pass --insecure (REGISTRAR_AGENT_INSECURE=true) on a network you trust`;
}

function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  const address = parseIpAddress(hostname.replace(/^\[(.*)\]$/, '$1'));
  if (!address) return false;
  return address.family === 4 ? address.bytes[0] === 127 : address.text === '::1';
}

/** `registrar-agent --help`, derived from the settings table (agent/settings.ts). */
export const USAGE = agentUsage();
