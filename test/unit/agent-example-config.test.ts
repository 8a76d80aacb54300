import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../agent/config.ts';

/**
 * packaging/agent.example.yaml is what operators copy to /etc/registrar-agent/agent.yaml and
 * then uncomment lines of. Every line it offers must load as the agent reads it: a commented
 * key at the wrong level (a top-level `region`, which is `auth.region`) broke the agent when
 * uncommented.
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

describe('packaging/agent.example.yaml', () => {
  it('refuses to start as shipped, naming url: an unconfigured package connects nowhere', () => {
    expect(() => load(example)).toThrow(/url: is required/);
  });

  it('loads once url is set', () => {
    const configured = example.replace(/^# url: (\S+).*$/m, 'url: $1');
    expect(load(configured)).toMatchObject({ group: 'web', namespace: 'shop' });
  });

  it('loads with every commented key uncommented, IAM mode included', () => {
    const all = uncommented(example).replace('mode: token', 'mode: iam');
    expect(all).toContain('  region: eu-west-1');
    expect(all).toContain('  drainDelay: 10s');
    expect(load(all)).toMatchObject({ auth: { mode: 'iam', region: 'eu-west-1' } });
  });
});
