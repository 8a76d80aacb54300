import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import type { AgentSetting } from './setting-shape.ts';
import { AGENT_SETTINGS, CONFIG_FILE_OPTION } from './settings.ts';

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

type FlagOptions = Record<
  string,
  { type: 'string' | 'boolean'; multiple?: boolean; short?: string }
>;

// Derived from AGENT_SETTINGS: a setting cannot lack its flag or variable by oversight.
/** Every flag of `registrar-agent` (docs/agent.md lists each; test/unit/docs-match-code.test.ts). */
export const FLAG_OPTIONS: FlagOptions = {
  [CONFIG_FILE_OPTION.flag]: { type: 'string' },
  ...Object.fromEntries(
    AGENT_SETTINGS.filter((setting) => setting.flag !== undefined).map((setting) => [
      setting.flag,
      setting.kind === 'switch' || setting.kind === 'off-switch'
        ? { type: 'boolean' }
        : { type: 'string', ...(setting.kind === 'list' ? { multiple: true } : {}) },
    ]),
  ),
  version: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const BOOLEAN_TEXT: Record<string, boolean> = {
  true: true,
  false: false,
  '1': true,
  '0': false,
  yes: true,
  no: false,
};

export interface ParsedFlags {
  layer: Layer;
  configFile: string | undefined;
  help: boolean;
  version: boolean;
}

export function readFlags(argv: string[]): ParsedFlags {
  let parsed: { values: Record<string, unknown> };
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
  const values = parsed.values;
  for (const setting of AGENT_SETTINGS) {
    if (setting.flag === undefined) continue;
    const value = values[setting.flag];
    if (value === undefined) continue;
    // `--no-imds` sets imds.enabled to false.
    const set = setting.kind === 'off-switch' ? value !== true : value;
    setPath(layer, setting.key, set, `--${setting.flag}`);
  }
  const configFile = values[CONFIG_FILE_OPTION.flag];
  return {
    layer,
    configFile: typeof configFile === 'string' ? configFile : undefined,
    help: values.help === true,
    version: values.version === true,
  };
}

export function readEnv(env: Record<string, string | undefined>): Layer {
  const layer: Layer = { values: {}, sources: {} };
  for (const setting of AGENT_SETTINGS) {
    if (setting.env === undefined) continue;
    const value = env[setting.env];
    if (value === undefined || value === '') continue;
    setPath(layer, setting.key, fromText(setting, value), setting.env);
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
  const unknown = unknownKeys(values);
  if (unknown.length > 0) {
    throw new AgentConfigError(`config file ${path}: ${unknown.map(describeUnknown).join('; ')}`);
  }
  // Nested keys too (`auth.token`), so a message can tell which layer gave the nested value.
  const sources: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) {
    sources[key] = path;
    if (isMapping(value))
      for (const nested of Object.keys(value)) sources[`${key}.${nested}`] = path;
  }
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

/** A variable's text as the setting's value; an unreadable boolean is left for the schema to name. */
function fromText(setting: AgentSetting, text: string): unknown {
  if (setting.kind === 'list') return splitList(text);
  if (setting.kind === 'switch' || setting.kind === 'off-switch') {
    return BOOLEAN_TEXT[text.trim().toLowerCase()] ?? text;
  }
  return text;
}

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}

/** The keys of a config file no setting has (`groop:`), nested ones as `timing.pingIntervall`. */
function unknownKeys(values: RawConfig): string[] {
  const known = new Set(AGENT_SETTINGS.map((setting) => setting.key));
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(values)) {
    const parent = [...known].some((name) => name.startsWith(`${key}.`));
    if (parent && isMapping(value)) {
      for (const inner of Object.keys(value)) {
        if (!known.has(`${key}.${inner}`)) unknown.push(`${key}.${inner}`);
      }
    } else if (!known.has(key) && !parent) {
      unknown.push(key);
    }
  }
  return unknown;
}

function describeUnknown(key: string): string {
  const closest = closestKey(
    key,
    AGENT_SETTINGS.map((setting) => setting.key),
  );
  return `unknown setting '${key}'${closest ? ` (did you mean '${closest}'?)` : ''}`;
}

/** The known key nearest by edit distance, if it is near (at most a third of the key). */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (!best || distance < best.distance) best = { key: candidate, distance };
  }
  return best && best.distance <= Math.max(1, Math.floor(key.length / 3)) ? best.key : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
