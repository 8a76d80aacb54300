import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGINES_RANGE, MINIMUM_NODE } from '../../scripts/node-version.js';

/**
 * Every entry point refuses an unsupported Node.js with one line, before any TypeScript loads:
 * run here under the oldest other `node` on PATH (this machine's own Node 20), the way a user
 * with that Node first on PATH runs them. Skipped, saying so, where no such node exists.
 */
function olderNode(): { execPath: string; version: string } | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'node');
    try {
      accessSync(candidate, constants.X_OK);
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
      const [major = 0, minor = 0] = version.slice(1).split('.').map(Number);
      if (major < 22 || (major === 22 && minor < 19)) return { execPath: candidate, version };
    } catch {
      // Not there, or not a node that runs.
    }
  }
  return undefined;
}

const old = olderNode();
const npm = old && join(dirname(old.execPath), 'npm');
const hasNpm = npm !== undefined && spawnSync(npm, ['--version']).status === 0;
if (!old) {
  console.warn('node-version tests skipped: no node older than 22.19 on PATH to run them with');
}

const REFUSAL = new RegExp(
  `^(registrar|registrar-agent|workload-registrar) needs Node\\.js ${MINIMUM_NODE.replaceAll('.', '\\.')} or newer; this is Node\\.js v\\d+\\.\\d+\\.\\d+ \\(.+\\); run 'nvm install' in the checkout \\(it reads \\.nvmrc\\), or get it from https://nodejs\\.org/$`,
);

/** The older node's directory first, as when it is the user's `node`. */
function envWithOldNode(): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _ignored, ...env } = process.env;
  return { ...env, PATH: `${dirname(old?.execPath ?? '')}${delimiter}${process.env.PATH}` };
}

function ourLines(stderr: string): string[] {
  // npm may warn about the machine's own npm configuration: not ours to judge.
  return stderr.split('\n').filter((line) => line !== '' && !line.startsWith('npm warn'));
}

describe.skipIf(!old)('entry points under an older Node', () => {
  it.each([
    ['registrar', 'bin/registrar.js', ['get', 'we']],
    ['registrar-agent', 'bin/registrar-agent.js', ['--help']],
  ])('%s prints one line naming both versions and exits 1', (program, bin, args) => {
    const result = spawnSync(old?.execPath ?? '', [bin, ...args], {
      encoding: 'utf8',
      env: envWithOldNode(),
    });
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    expect(ourLines(result.stderr)).toEqual([expect.stringMatching(REFUSAL)]);
    expect(result.stderr).toContain(`${program} needs Node.js ${MINIMUM_NODE}`);
    expect(result.stderr).toContain(`this is Node.js ${old?.version} (${old?.execPath})`);
  });

  it.skipIf(!hasNpm).each(['start', 'test', 'bench'])(
    'npm run %s prints one line and exits 1, no loader stack trace',
    (script) => {
      const result = spawnSync(npm ?? '', ['run', script], {
        encoding: 'utf8',
        env: envWithOldNode(),
        timeout: 60_000,
      });
      expect(result.status).toBe(1);
      expect(ourLines(result.stderr)).toEqual([expect.stringMatching(REFUSAL)]);
      expect(result.stderr).not.toMatch(/ERR_UNKNOWN_FILE_EXTENSION|\n\s+at /);
    },
  );
});

describe('the stated minimum', () => {
  it('is the same in package.json, its lock, .nvmrc and README', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
      engines: { node: string };
    };
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
      packages: Record<string, { engines?: { node?: string } }>;
    };
    expect(pkg.engines.node).toBe(ENGINES_RANGE);
    expect(ENGINES_RANGE.startsWith(`^${MINIMUM_NODE} `)).toBe(true);
    expect(lock.packages['']?.engines?.node).toBe(pkg.engines.node);
    // nvm/fnm resolve "22" to the newest 22.x, which is at least the minimum.
    expect(readFileSync('.nvmrc', 'utf8').trim()).toBe(MINIMUM_NODE.split('.')[0]);
    expect(readFileSync('.node-version', 'utf8').trim()).toBe(MINIMUM_NODE.split('.')[0]);
    expect(readFileSync('.npmrc', 'utf8')).toMatch(/^engine-strict=true$/m);
    expect(readFileSync('README.md', 'utf8')).toContain(
      `Requires Node.js ${MINIMUM_NODE.split('.').slice(0, 2).join('.')} or newer`,
    );
  });

  it('covers every dependency: none declares a higher minimum', () => {
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
      packages: Record<string, { engines?: { node?: string } }>;
    };
    const minimum = MINIMUM_NODE.split('.').map(Number);
    // A range accepts the minimum when one of its alternatives does ("^22.13||^24||>=26": the
    // first): `^X.Y.Z` within major X from X.Y.Z, `>=X.Y.Z` from X.Y.Z on.
    const accepts = (range: string) =>
      range.split('||').some((alternative) => {
        const match = alternative.trim().match(/^(>=|\^)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/);
        if (!match) return true;
        const floor = [Number(match[2]), Number(match[3] ?? 0), Number(match[4] ?? 0)];
        if (compare(minimum, floor) < 0) return false;
        return match[1] !== '^' || minimum[0] === floor[0];
      });
    const refusing = Object.entries(lock.packages).filter(
      ([name, entry]) => name !== '' && entry.engines?.node && !accepts(entry.engines.node),
    );
    expect(refusing.map(([name]) => name)).toEqual([]);
    // And the minimum is not guessed: undici is what sets it.
    const undici = lock.packages['node_modules/undici']?.engines?.node ?? '';
    expect(undici.replace(/\s/g, '')).toBe(`>=${MINIMUM_NODE}`);
  });
});

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < 3; i++) {
    const difference = (a[i] ?? 0) - (b[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}
