import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { agentConfigFields, loadAgentConfig, USAGE } from '../../agent/config.ts';
import { readEnv, readFlags } from '../../agent/config-sources.ts';
import { AGENT_SETTINGS, flagUsage } from '../../agent/settings.ts';

/**
 * One table (agent/settings.ts) feeds the flags, the variables and `--help`; these tests hold
 * it to what the schema accepts and to what docs/agent.md and the README say.
 */

/** The checked fields' leaf keys as YAML keys: `url`, `auth.mode`, `timing.pingInterval`, ... */
function schemaKeys(reader: object, prefix = ''): string[] {
  if (!('fields' in reader)) return [prefix];
  return Object.entries(reader.fields as Record<string, object>).flatMap(([key, value]) =>
    schemaKeys(value, prefix ? `${prefix}.${key}` : key),
  );
}

/** Rows of the markdown table under "## Configure": cells with backticks removed. */
function docsTable(): string[][] {
  const text = readFileSync('docs/agent.md', 'utf8');
  const section = text.slice(text.indexOf('## Configure'), text.indexOf('## Authentication'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim().replaceAll('\\|', '|').replaceAll('`', '')),
    );
}

describe('agent settings table', () => {
  it('has exactly the settings the configuration schema accepts', () => {
    expect(AGENT_SETTINGS.map((s) => s.key).sort()).toEqual(schemaKeys(agentConfigFields).sort());
  });

  it('gives every setting a variable, and every setting but the token a flag', () => {
    for (const setting of AGENT_SETTINGS) {
      expect(setting.env, setting.key).toMatch(/^REGISTRAR_AGENT_[A-Z_]+$/);
      if (setting.key !== 'auth.token') expect(setting.flag, setting.key).toBeDefined();
    }
    const envs = AGENT_SETTINGS.map((s) => s.env);
    const flags = AGENT_SETTINGS.map((s) => s.flag).filter(Boolean);
    expect(new Set(envs).size).toBe(envs.length);
    expect(new Set(flags).size).toBe(flags.length);
  });

  it('lists every setting in --help with its flag, variable, YAML key and default', () => {
    const lines = USAGE.split('\n');
    for (const setting of AGENT_SETTINGS) {
      // Two lines per setting: the flag and what it does, then where else it comes from.
      const at = lines.findIndex((line) => line.includes(`yaml ${setting.key},`));
      expect(at, setting.key).toBeGreaterThan(0);
      const [flagLine, whereLine] = [lines[at - 1] ?? '', lines[at] ?? ''];
      expect(flagLine.trimStart().startsWith(flagUsage(setting) ?? '(no flag)'), flagLine).toBe(
        true,
      );
      expect(whereLine).toContain(`env ${setting.env}`);
      expect(whereLine).toContain(`default ${setting.default}`);
    }
    expect(USAGE).toContain('--config <file>');
    expect(USAGE).toContain('--version');
  });

  it('reads every flag and every variable into its setting', () => {
    for (const setting of AGENT_SETTINGS) {
      const [head, tail] = setting.key.split('.') as [string, string | undefined];
      const pick = (values: Record<string, unknown>) =>
        tail === undefined ? values[head] : (values[head] as Record<string, unknown>)?.[tail];
      if (setting.flag) {
        const argv = setting.arg ? [`--${setting.flag}`, 'x'] : [`--${setting.flag}`];
        const layer = readFlags(argv).layer;
        expect(pick(layer.values), setting.key).toBeDefined();
        expect(layer.sources[setting.key]).toBe(`--${setting.flag}`);
      }
      const boolean = setting.kind === 'switch' || setting.kind === 'off-switch';
      const layer = readEnv({ [setting.env as string]: boolean ? 'false' : 'x' });
      expect(pick(layer.values), setting.key).toEqual(
        boolean ? false : setting.kind === 'list' ? ['x'] : 'x',
      );
    }
  });

  it('turns boolean variables into booleans and names a bad one', () => {
    const base = {
      REGISTRAR_AGENT_URL: 'ws://127.0.0.1:8080',
      REGISTRAR_AGENT_GROUP: 'web',
      REGISTRAR_AGENT_NAMESPACE: 'shop',
      REGISTRAR_AGENT_TOKEN: 't',
      REGISTRAR_AGENT_IP: '10.0.0.5',
    };
    const config = loadAgentConfig([], {
      ...base,
      REGISTRAR_AGENT_IMDS: 'false',
      REGISTRAR_AGENT_DEBUG: 'true',
    });
    expect(config).toMatchObject({ imds: { enabled: false }, debug: true });
    expect(() => loadAgentConfig([], { ...base, REGISTRAR_AGENT_DEBUG: 'maybe' })).toThrow(
      "debug (from REGISTRAR_AGENT_DEBUG): must be true or false, got 'maybe'",
    );
  });

  it('is the table docs/agent.md shows, row for row', () => {
    const rows = docsTable();
    expect(rows.map((row) => row[0])).toEqual(AGENT_SETTINGS.map((s) => s.key));
    for (const setting of AGENT_SETTINGS) {
      const [, flag, variable, defaultValue] = rows.find((row) => row[0] === setting.key) ?? [];
      expect(flag, setting.key).toContain(flagUsage(setting) ?? '(none');
      expect(variable, setting.key).toBe(setting.env);
      expect(defaultValue, setting.key).toBe(setting.default);
    }
  });

  it('is what the README promises: --help lists every setting, docs/agent.md has the table', () => {
    const readme = readFileSync('README.md', 'utf8');
    const section = readme.slice(readme.indexOf('## The agent: `registrar-agent`'));
    expect(section).toContain('`npx registrar-agent --help` lists every setting');
    expect(section).toContain('[docs/agent.md](docs/agent.md)');
  });
});
