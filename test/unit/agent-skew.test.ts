import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../../lib/config.ts';
import {
  agentSkewPolicy,
  agentSkewRefusal,
  defaultOldestAgent,
  UNVERSIONED_AGENT,
} from '../../lib/domain/agent-skew.ts';
import {
  compareVersions,
  parseReleaseVersion,
  type ReleaseVersion,
} from '../../lib/domain/release-version.ts';
import { RELEASE } from '../../lib/release.ts';

const v = (text: string): ReleaseVersion => {
  const parsed = parseReleaseVersion(text);
  if (!parsed) throw new Error(`not a version: ${text}`);
  return parsed;
};

describe('semantic versions', () => {
  it('orders releases, prereleases before their release, numbers as numbers', () => {
    const ordered = [
      '0.1.0',
      '0.2.0-dev',
      '0.2.0-rc.1',
      '0.2.0-rc.2',
      '0.2.0-rc.10',
      '0.2.0',
      '0.2.1',
      '0.10.0',
      '1.0.0',
    ];
    for (let i = 1; i < ordered.length; i++) {
      const [a, b] = [ordered[i - 1] ?? '', ordered[i] ?? ''];
      expect(compareVersions(v(a), v(b)), `${a} < ${b}`).toBeLessThan(0);
      expect(compareVersions(v(b), v(a)), `${b} > ${a}`).toBeGreaterThan(0);
    }
    expect(compareVersions(v('0.2.0+build.7'), v('0.2.0'))).toBe(0);
  });

  it.each(['', '1.2', '1.2.3.4', '01.2.3', '1.2.3-', 'v1.2.3', '1.2.3 ', '1.2.3-a..b', 'latest'])(
    'refuses %j',
    (text) => {
      expect(parseReleaseVersion(text)).toBeUndefined();
    },
  );

  it('refuses a version longer than 64 characters', () => {
    expect(parseReleaseVersion(`1.2.3-${'a'.repeat(59)}`)).toBeUndefined();
    expect(parseReleaseVersion(`1.2.3-${'a'.repeat(58)}`)).toBeDefined();
  });
});

describe('agent skew policy', () => {
  it('accepts the minor release and the two before it by default', () => {
    expect(defaultOldestAgent(v('0.5.3'))).toEqual({ major: 0, minor: 3 });
    expect(defaultOldestAgent(v('1.7.0-dev'))).toEqual({ major: 1, minor: 5 });
    expect(defaultOldestAgent(v('0.1.0'))).toEqual({ major: 0, minor: 0 });
  });

  it('cannot work out the floor of a new major release without the last minor of the one before', () => {
    expect(() => defaultOldestAgent(v('1.0.0'))).toThrow(
      'the agent skew floor of 1.0.0 needs the last minor release of major 0 in LAST_MINOR_OF_MAJOR',
    );
  });

  it('has a floor for this release (a major release must extend LAST_MINOR_OF_MAJOR)', () => {
    expect(() => agentSkewPolicy(RELEASE)).not.toThrow();
  });

  const policy = agentSkewPolicy('0.4.0');

  it.each(['0.2.0', '0.2.0-dev', '0.3.9', '0.4.0', '0.4.1', '0.9.0'])(
    '0.4.0 accepts %s',
    (agent) => {
      expect(agentSkewRefusal(agent, policy)).toBeUndefined();
    },
  );

  it('refuses an agent two minors too old, naming both versions and what to do', () => {
    expect(agentSkewRefusal('0.1.9', policy)).toBe(
      'agent version 0.1.9 is too old for registrar 0.4.0, which accepts agents 0.2 to 0.x (its minor release and the 2 before it); upgrade the agent (docs/operations.md, version skew)',
    );
  });

  it('takes an agent that sends no version for a 0.1 agent', () => {
    expect(agentSkewRefusal(undefined, policy)).toMatch(
      /^agent version 0\.1\.x \(it sent no version\) is too old for registrar 0\.4\.0/,
    );
    expect(agentSkewRefusal(undefined, agentSkewPolicy('0.3.0'))).toBeUndefined();
    expect(UNVERSIONED_AGENT).toBe('0.1.x');
  });

  it('refuses an agent of a newer major release', () => {
    expect(agentSkewRefusal('1.0.0', policy)).toBe(
      'agent version 1.0.0 is of a newer major release than registrar 0.4.0, which accepts agents 0.2 to 0.x; upgrade the registrar first, or run an agent of 0.x',
    );
  });

  it("follows the operator's floor, up or down", () => {
    const raised = agentSkewPolicy('0.4.0', { major: 0, minor: 4 });
    expect(agentSkewRefusal('0.3.2', raised)).toMatch(/accepts agents 0\.4 to 0\.x/);
    const lowered = agentSkewPolicy('0.4.0', { major: 0, minor: 1 });
    expect(agentSkewRefusal(undefined, lowered)).toBeUndefined();
  });
});

describe('REGISTRAR_OLDEST_AGENT_VERSION', () => {
  const base = { REGISTRAR_TABLE: 't' };

  it('defaults to the policy of this release', () => {
    expect(readConfig(base).agentSkew).toEqual(agentSkewPolicy(RELEASE));
  });

  it('moves the floor', () => {
    const config = readConfig({ ...base, REGISTRAR_OLDEST_AGENT_VERSION: '0.1' });
    expect(config.agentSkew).toEqual({ registrar: RELEASE, oldest: { major: 0, minor: 1 } });
  });

  it.each(['0.1.0', 'latest', '1'])('refuses %j, naming the variable and the value', (value) => {
    expect(() => readConfig({ ...base, REGISTRAR_OLDEST_AGENT_VERSION: value })).toThrow(
      new ConfigError(
        `invalid configuration: REGISTRAR_OLDEST_AGENT_VERSION (value '${value}'): must be MAJOR.MINOR, such as 0.1`,
      ),
    );
  });
});
