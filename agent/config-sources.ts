import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';

/**
 * The three places configuration comes from, each turned into the same raw shape (the YAML
 * file's keys) so that one schema validates the merge. Later layers win: file, then
 * environment (`REGISTRAR_AGENT_*`), then flags. `sources` remembers where each top-level key
 * came from, so an error can say "--url" or "REGISTRAR_AGENT_URL" instead of just "url".
 */
export type RawConfig = Record<string, unknown>;

export interface Layer {
  values: RawConfig;
  sources: Record<string, string>;
}

export class AgentConfigError extends Error {}

const FLAG_OPTIONS = {
  config: { type: 'string' },
  url: { type: 'string' },
  group: { type: 'string' },
  namespace: { type: 'string' },
  network: { type: 'string' },
  label: { type: 'string', multiple: true },
  ip: { type: 'string', multiple: true },
  locality: { type: 'string' },
  auth: { type: 'string' },
  'token-file': { type: 'string' },
  region: { type: 'string' },
  'log-format': { type: 'string' },
  debug: { type: 'boolean' },
  'no-imds': { type: 'boolean' },
  'imds-url': { type: 'string' },
  'imds-timeout': { type: 'string' },
  'ping-interval': { type: 'string' },
  'max-connection-age': { type: 'string' },
  'ack-timeout': { type: 'string' },
  'backoff-cap': { type: 'string' },
  'refusal-backoff': { type: 'string' },
  'probe-time-scale': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Flag name -> raw key; nested keys are written `timing.pingInterval`. */
const FLAG_KEYS: Record<string, string> = {
  url: 'url',
  group: 'group',
  namespace: 'namespace',
  network: 'network',
  label: 'labels',
  ip: 'ip',
  locality: 'locality',
  auth: 'auth.mode',
  'token-file': 'auth.tokenFile',
  region: 'auth.region',
  'log-format': 'logFormat',
  debug: 'debug',
  'imds-url': 'imds.url',
  'imds-timeout': 'imds.timeout',
  'ping-interval': 'timing.pingInterval',
  'max-connection-age': 'timing.maxConnectionAge',
  'ack-timeout': 'timing.ackTimeout',
  'backoff-cap': 'timing.backoffCap',
  'refusal-backoff': 'timing.refusalBackoff',
  'probe-time-scale': 'timing.probeTimeScale',
};

/** Environment variable -> raw key. Lists are comma-separated: `app=web,tier=front`. */
export const ENV_KEYS: Record<string, string> = {
  REGISTRAR_AGENT_URL: 'url',
  REGISTRAR_AGENT_GROUP: 'group',
  REGISTRAR_AGENT_NAMESPACE: 'namespace',
  REGISTRAR_AGENT_NETWORK: 'network',
  REGISTRAR_AGENT_LABELS: 'labels',
  REGISTRAR_AGENT_IP: 'ip',
  REGISTRAR_AGENT_LOCALITY: 'locality',
  REGISTRAR_AGENT_AUTH: 'auth.mode',
  REGISTRAR_AGENT_TOKEN: 'auth.token',
  REGISTRAR_AGENT_TOKEN_FILE: 'auth.tokenFile',
  REGISTRAR_AGENT_REGION: 'auth.region',
  REGISTRAR_AGENT_LOG_FORMAT: 'logFormat',
  REGISTRAR_AGENT_IMDS_URL: 'imds.url',
  REGISTRAR_AGENT_PING_INTERVAL: 'timing.pingInterval',
  REGISTRAR_AGENT_MAX_CONNECTION_AGE: 'timing.maxConnectionAge',
};
const LIST_KEYS = new Set(['labels', 'ip']);

export interface ParsedFlags {
  layer: Layer;
  configFile: string | undefined;
  help: boolean;
}

export function readFlags(argv: string[]): ParsedFlags {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof FLAG_OPTIONS; strict: true }>>;
  try {
    parsed = parseArgs({
      args: argv,
      options: FLAG_OPTIONS,
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new AgentConfigError(`${(error as Error).message}; see registrar-agent --help`);
  }
  const layer: Layer = { values: {}, sources: {} };
  const values = parsed.values as Record<string, unknown>;
  for (const [flag, key] of Object.entries(FLAG_KEYS)) {
    if (values[flag] !== undefined) setPath(layer, key, values[flag], `--${flag}`);
  }
  if (values['no-imds'] === true) setPath(layer, 'imds.enabled', false, '--no-imds');
  return {
    layer,
    configFile: typeof values.config === 'string' ? values.config : undefined,
    help: values.help === true,
  };
}

export function readEnv(env: Record<string, string | undefined>): Layer {
  const layer: Layer = { values: {}, sources: {} };
  for (const [variable, key] of Object.entries(ENV_KEYS)) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    const raw = LIST_KEYS.has(key) ? splitList(value) : value;
    setPath(layer, key, raw, variable);
  }
  return layer;
}

export function readFile(path: string): Layer {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new AgentConfigError(`cannot read config file ${path}: ${(error as Error).message}`);
  }
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    throw new AgentConfigError(
      `config file ${path} is not valid YAML: ${(error as Error).message}`,
    );
  }
  if (document === null || document === undefined) return { values: {}, sources: {} };
  if (typeof document !== 'object' || Array.isArray(document)) {
    throw new AgentConfigError(`config file ${path} must be a YAML mapping of settings`);
  }
  const values = document as RawConfig;
  const sources = Object.fromEntries(Object.keys(values).map((key) => [key, path]));
  return { values, sources };
}

/** Merges layers; nested mappings (auth, imds, timing) merge key by key. */
export function mergeLayers(layers: Layer[]): Layer {
  const merged: Layer = { values: {}, sources: {} };
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer.values)) {
      const current = merged.values[key];
      if (isMapping(value) && isMapping(current)) {
        merged.values[key] = { ...current, ...value };
      } else {
        merged.values[key] = value;
      }
    }
    for (const [key, source] of Object.entries(layer.sources)) merged.sources[key] = source;
  }
  return merged;
}

function setPath(layer: Layer, key: string, value: unknown, source: string): void {
  const [head, tail] = key.split('.') as [string, string | undefined];
  if (tail === undefined) {
    layer.values[head] = value;
  } else {
    const nested = isMapping(layer.values[head]) ? (layer.values[head] as RawConfig) : {};
    nested[tail] = value;
    layer.values[head] = nested;
  }
  layer.sources[key] = source;
  layer.sources[head] ??= source;
}

function isMapping(value: unknown): value is RawConfig {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}
