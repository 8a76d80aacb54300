import { describe, expect, it } from 'vitest';
import { ENGINES_RANGE, nodeVersionProblem } from '../../scripts/node-version.js';

const at = (version: string, more: { typescript?: string | false; bundled?: boolean } = {}) =>
  nodeVersionProblem({ version, execPath: '/opt/node/bin/node', typescript: 'strip', ...more });

describe('nodeVersionProblem', () => {
  it.each(['22.19.0', '22.23.3', '23.6.0', '24.0.0', '26.1.0'])('accepts Node %s', (version) => {
    expect(at(version)).toBeUndefined();
  });

  it.each(['20.20.2', '22.0.0', '22.18.0', '23.5.0'])(
    'refuses Node %s in one line naming both versions and how to get one',
    (version) => {
      const problem = at(version);
      expect(problem).toBe(
        `workload-registrar needs Node.js 22.19.0 or newer; this is Node.js v${version} (/opt/node/bin/node); run 'nvm install' in the checkout (it reads .nvmrc), or get it from https://nodejs.org/`,
      );
      expect(problem).not.toContain('\n');
    },
  );

  it('names the program that refuses', () => {
    expect(nodeVersionProblem({ program: 'registrar-agent', version: '20.0.0' })).toMatch(
      /^registrar-agent needs Node\.js 22\.19\.0/,
    );
  });

  it('refuses a new enough Node with type stripping turned off, saying how to turn it on', () => {
    expect(at('22.20.0', { typescript: false })).toMatch(
      /type stripping is off in this Node\.js v22\.20\.0: remove --no-experimental-strip-types/,
    );
  });

  it('lets the bundled agent run on any Node 22, which needs no type stripping', () => {
    expect(at('22.0.0', { bundled: true, typescript: false })).toBeUndefined();
    expect(at('20.20.2', { bundled: true })).toMatch(
      /^workload-registrar needs Node\.js 22 or newer/,
    );
  });

  it('states the same range package.json declares', () => {
    expect(ENGINES_RANGE).toBe('^22.19.0 || >=23.6.0');
  });
});
