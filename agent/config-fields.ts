import { isIP } from 'node:net';
import { formatDuration, parseDuration } from '../lib/domain/duration.ts';
import {
  flag,
  isMapping,
  join,
  nonEmpty,
  object,
  optional,
  type Reader,
  shown,
  text,
  withDefault,
} from '../lib/validation/fields.ts';
import { DEFAULT_IMDS_URL, MAX_DRAIN_DELAY_MS } from './settings.ts';
import { sidecarConfigFields } from './sidecar-settings.ts';

/**
 * The checks of every setting (the YAML keys; flags and variables arrive in the same shape,
 * agent/config-sources.ts), as plain functions rather than a validation library, which was
 * most of the agent's bundle (issue 27). Each message names the value and what it must be;
 * config.ts adds the key and where it came from (`--ip`, `REGISTRAR_AGENT_URL`, a file).
 */

// Kubernetes label syntax: optional DNS prefix, name of at most 63 characters.
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const DNS_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const LOCALITY = /^[^/\s]+(\/[^/\s]+){0,2}$/;

/** A number of milliseconds, or a duration's text (`0` alone needs no unit). */
function durationOf(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return undefined;
  return value.trim() === '0' ? 0 : parseDuration(value);
}

const positiveDuration: Reader<number> = (value, path, problems) => {
  const ms = durationOf(value);
  if (ms === undefined || !(ms > 0)) {
    problems.push({
      path,
      message: `must be a positive duration such as 500ms, 10s or 5m, got ${shown(value)}`,
    });
  }
  return ms as number;
};
const duration = optional(positiveDuration);

// A drain delay may be 0 (no drain), unlike the other durations.
const drainDelay = optional<number>((value, path, problems) => {
  const ms = durationOf(value);
  if (ms === undefined || !(ms >= 0) || ms > MAX_DRAIN_DELAY_MS) {
    problems.push({
      path,
      message: `must be a duration from 0 (no drain) to ${formatDuration(MAX_DRAIN_DELAY_MS)}, such as 10s, got ${shown(value)}`,
    });
  }
  return ms as number;
});

// 0 turns it off.
const zeroOrDuration = optional<number>((value, path, problems) => {
  const ms = durationOf(value);
  if (ms === undefined || !(ms >= 0)) {
    problems.push({
      path,
      message: `must be 0 (never) or a duration such as 30s or 5m, got ${shown(value)}`,
    });
  }
  return ms as number;
});

// A number, or its text (a flag or a variable): above 0, at most 1.
const timeScale = optional<number>((value, path, problems) => {
  const scale =
    typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!(scale > 0 && scale <= 1) || (typeof value === 'string' && value.trim() === '')) {
    problems.push({ path, message: `must be a number above 0 and at most 1, got ${shown(value)}` });
  }
  return scale;
});

/** `key: value` pairs (the file), or `key=value` items (flags, a variable's list). */
const labels = withDefault<Record<string, string>>((value, path, problems) => {
  const result: Record<string, string> = {};
  let pairs: [string, unknown][];
  if (Array.isArray(value)) {
    pairs = value.map((item) => {
      const at = typeof item === 'string' ? item.indexOf('=') : -1;
      return at < 0 ? [String(item), undefined] : [item.slice(0, at), item.slice(at + 1)];
    });
  } else if (isMapping(value)) {
    pairs = Object.entries(value);
  } else {
    problems.push({
      path,
      message: `must be a mapping of key: value or a list of key=value, got ${shown(value)}`,
    });
    return result;
  }
  for (const [key, raw] of pairs) {
    const item = ['string', 'number', 'boolean'].includes(typeof raw) ? String(raw) : undefined;
    if (raw === undefined) {
      problems.push({ path, message: `label '${key}' must be written key=value` });
    } else if (!LABEL_KEY.test(key)) {
      problems.push({ path, message: `label key '${key}' is not a valid Kubernetes label key` });
    } else if (item === undefined || !LABEL_VALUE.test(item)) {
      problems.push({
        path,
        message: `label value ${item === undefined ? shown(raw) : `'${item}'`} of '${key}' is not a valid label value (at most 63 of [A-Za-z0-9_.-])`,
      });
    } else {
      result[key] = item;
    }
  }
  return result;
}, {});

/** One address or a list of them. */
const ipList = withDefault<string[]>((value, path, problems) => {
  const items = Array.isArray(value) ? value : [value];
  items.forEach((ip, index) => {
    if (typeof ip !== 'string' || isIP(ip) === 0) {
      const at = Array.isArray(value) ? join(path, index) : path;
      problems.push({ path: at, message: `'${String(ip)}' is not an IPv4 or IPv6 address` });
    }
  });
  return items as string[];
}, []);

/** Required: `missing` says what it is when absent. */
function required<T>(reader: Reader<T>, missing: string): Reader<T> {
  return (value, path, problems) => {
    if (value === undefined) {
      problems.push({ path, message: `is required: ${missing}` });
      return value as T;
    }
    return reader(value, path, problems);
  };
}

const wsUrl = text(
  (v) => /^wss?:\/\/[^/?#]+/.test(v) && URL.canParse(v),
  'must be a ws:// or wss:// URL such as wss://abc123.execute-api.us-east-1.amazonaws.com/prod',
);

const name = (what: string) =>
  required((value, path, problems) => {
    if (typeof value !== 'string' || !DNS_NAME.test(value)) {
      problems.push({
        path,
        message: `'${String(value)}' is not a valid ${what} name (lower case letters, digits, '-' and '.')`,
      });
    }
    return value as string;
  }, `the ${what}`);

function oneOf<const T extends string>(choices: readonly T[]): Reader<T> {
  const said = choices.map((choice) => `'${choice}'`).join(' or ');
  return text((v) => (choices as readonly string[]).includes(v), `must be ${said}`) as Reader<T>;
}

const someText = optional(text(nonEmpty, 'must be a non-empty string'));

/** Every setting (the YAML keys), each with its check; docs and --help hold to its keys. */
export const agentConfigFields = object({
  url: required(wsUrl, 'the registrar WebSocket URL (--url or REGISTRAR_AGENT_URL)'),
  insecure: withDefault(flag, false),
  group: name('WorkloadGroup'),
  namespace: name('namespace'),
  network: someText,
  labels,
  ip: ipList,
  locality: optional((value, path, problems) => {
    if (typeof value !== 'string' || !LOCALITY.test(value)) {
      problems.push({ path, message: `'${String(value)}' must be region[/zone[/subzone]]` });
    }
    return value as string;
  }),
  auth: object({
    mode: withDefault(oneOf(['token', 'iam'] as const), 'token'),
    // Never echoed: a token in the wrong place is still a token.
    token: optional(text(nonEmpty, 'must be a non-empty string', { secret: true })),
    tokenFile: someText,
    region: someText,
    identityDocument: someText,
    identitySignature: someText,
  }),
  // A group's editor writes exec probes' commands: they never run as root.
  probeUser: optional(
    text(
      (v) => /^([a-z_][a-z0-9_-]{0,31}|\d+(:\d+)?)$/.test(v) && v !== 'root' && !/^0(:|$)/.test(v),
      'must be a user name, a uid or uid:gid other than root',
    ),
  ),
  logFormat: withDefault(oneOf(['text', 'json'] as const), 'text'),
  debug: withDefault(flag, false),
  imds: object({
    enabled: withDefault(flag, true),
    url: withDefault(
      text(URL.canParse, 'must be a URL such as http://169.254.169.254'),
      DEFAULT_IMDS_URL,
    ),
    timeout: withDefault(positiveDuration, 1_000),
  }),
  timing: object({
    pingInterval: duration,
    maxConnectionAge: duration,
    connectTimeout: duration,
    ackTimeout: duration,
    backoffBase: duration,
    backoffCap: duration,
    refusalBackoff: duration,
    refusalBackoffCap: duration,
    missingGroupRetry: duration,
    stableAfter: duration,
    probeTimeScale: timeScale,
    drainDelay,
    memoryReclaimAfter: zeroOrDuration,
  }),
  sidecar: sidecarConfigFields,
});

export type RawAgentConfig = ReturnType<typeof agentConfigFields>;
