import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadAgentConfig } from '../../agent/config.ts';

/**
 * packaging/agent.example.yaml is what the packages install as /etc/registrar-agent/agent.yaml,
 * and what operators then uncomment lines of. Nothing active in it may register a VM anywhere:
 * the 0.2.0 file had `group: web`, `namespace: shop` and a `version` label active, so a team
 * that set only `url` registered every VM as shop/web. Every line it offers must load as the
 * agent reads it: a commented key at the wrong level (a top-level `region`, which is
 * `auth.region`) broke the agent when uncommented.
 */
const dir = mkdtempSync(join(tmpdir(), 'agent-example-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const example = readFileSync(
  new URL('../../packaging/agent.example.yaml', import.meta.url),
  'utf8',
);

/** The example with every commented-out key line uncommented, in place (its indentation kept). */
function uncommented(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/^(\s*)# (\s*[A-Za-z][A-Za-z0-9]*:)/, '$1$2'))
    .join('\n');
}

function load(text: string) {
  const file = join(dir, `agent-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return loadAgentConfig(['--config', file], {});
}

/** The example with one commented key set, as an operator's edit would. */
function set(text: string, key: string, value: string): string {
  const edited = text.replace(new RegExp(`^# ${key}: .*$`, 'm'), `${key}: ${value}`);
  if (edited === text) throw new Error(`no commented '${key}:' line in the example`);
  return edited;
}

describe('packaging/agent.example.yaml', () => {
  it('has nothing active but defaults that neither connect nor register: token mode, its file, JSON logs', () => {
    expect(parseYaml(example)).toEqual({
      auth: { mode: 'token', tokenFile: '/etc/registrar-agent/token' },
      logFormat: 'json',
    });
  });

  it('refuses to start as shipped, naming url, group and namespace: an unconfigured package connects nowhere', () => {
    expect(() => load(example)).toThrow(
      /url: is required.*group: is required.*namespace: is required/,
    );
  });

  it('refuses to start with only url set, naming group and namespace, and nothing else', () => {
    const onlyUrl = set(example, 'url', 'wss://abc123.execute-api.eu-west-1.amazonaws.com/v1');
    expect(() => load(onlyUrl)).toThrow(
      /^invalid agent configuration: group: is required: [^;]*; namespace: is required: [^;]*$/,
    );
  });

  it('loads once url, group and namespace are set, with no labels of its own', () => {
    let configured = set(example, 'url', 'wss://abc123.execute-api.eu-west-1.amazonaws.com/v1');
    configured = set(set(configured, 'group', 'payments'), 'namespace', 'billing');
    expect(load(configured)).toMatchObject({
      group: 'payments',
      namespace: 'billing',
      labels: {},
      auth: { mode: 'token', tokenFile: '/etc/registrar-agent/token' },
      logFormat: 'json',
    });
  });

  it('loads with every commented key uncommented, IAM mode included', () => {
    const all = uncommented(example).replace('mode: token', 'mode: iam');
    expect(all).toContain('  region: eu-west-1');
    expect(all).toContain('  drainDelay: 10s');
    expect(load(all)).toMatchObject({ auth: { mode: 'iam', region: 'eu-west-1' } });
  });
});
