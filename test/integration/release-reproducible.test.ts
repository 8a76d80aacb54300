import { execFile, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recordedArtifacts } from '../../packaging/release-record.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import { previousRelease, readChangelog } from '../fixtures/previous-release.ts';
import { previousReleaseSkip } from '../fixtures/release-fleet.ts';

/**
 * A release's artifacts can be rebuilt by anyone from its commit: `npm run release -- --check`
 * rebuilds the previous release (CHANGELOG.md) from its commit alone (`git archive`, `npm ci`
 * of its lockfile, its own packaging code) and every artifact's SHA-256 must be the one
 * recorded. 0.2.0's first sums came from a checkout whose node_modules was installed for a
 * later lockfile: this test failed on them (all four differed).
 *
 * Needs the history (the release's commit), the npm registry or npm's cache (about 45 s), and
 * dpkg-deb and rpmbuild; CI has them all and always runs it. Not about the store: not run again
 * against DynamoDB Local.
 */
const REPO = join(import.meta.dirname, '..', '..');
const hasCommand = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
const tools = ['dpkg-deb', 'rpmbuild'].every(hasCommand) || process.env.CI === 'true';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Asynchronous: a worker blocked for the ~45 s build misses vitest's own heartbeats. */
function releaseCheck(version: string): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(REPO, 'scripts/release.ts'), '--check', version],
      { cwd: REPO, encoding: 'utf8', timeout: 300_000 },
      (error, stdout, stderr) =>
        done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe.skipIf(
  testBackend() === 'dynamodb-local' || !tools || previousReleaseSkip() !== undefined,
)('the previous release, rebuilt from its commit', () => {
  it('gives every artifact the SHA-256 CHANGELOG.md records', async () => {
    const { version } = previousRelease(readChangelog());
    const recorded = recordedArtifacts(readFileSync(join(REPO, 'CHANGELOG.md'), 'utf8'), version);
    expect(recorded.length).toBe(4);
    const scratch = () =>
      readdirSync(tmpdir()).filter((name) => name.startsWith('registrar-release-'));
    const before = scratch();
    const check = await releaseCheck(version);
    // The release's tree (with its node_modules) and the built artifacts are gone again.
    expect(scratch().filter((name) => !before.includes(name))).toEqual([]);
    expect(check.stderr).not.toMatch(/failed|Error/);
    expect(check.code, check.stdout).toBe(0);
    for (const { name, sha256 } of recorded) {
      expect(check.stdout).toContain(`${name}: ok ${sha256}`);
    }
  }, 320_000);
});
