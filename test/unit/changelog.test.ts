import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { compareVersions, parseReleaseVersion } from '../../lib/domain/release-version.ts';
import {
  currentVersion,
  parseChangelog,
  previousRelease,
  REPO,
  readChangelog,
} from '../fixtures/previous-release.ts';

/**
 * CHANGELOG.md is the record of releases (tags may not survive how the repository is
 * published): what the release procedure (docs/contributing.md, "Releasing") checks.
 */
const changelog = readChangelog();
const version = (text: string) => {
  const parsed = parseReleaseVersion(text);
  if (!parsed) throw new Error(`not a version: ${text}`);
  return parsed;
};

describe('CHANGELOG.md', () => {
  it('records 0.1.0 as cut from ea2a2d0', () => {
    expect(changelog.releases.find((r) => r.version === '0.1.0')?.commit).toMatch(/^ea2a2d0/);
  });

  it('lists releases newest first, each once', () => {
    const versions = changelog.releases.map((r) => version(r.version));
    for (let i = 1; i < versions.length; i++) {
      const [newer, older] = [versions[i - 1], versions[i]];
      if (newer && older) expect(compareVersions(newer, older)).toBeGreaterThan(0);
    }
  });

  it("has package.json's version after the newest release (the next one, -dev), or equal to it", () => {
    const [newest] = changelog.releases;
    const now = version(currentVersion());
    expect(newest).toBeDefined();
    const last = version(newest?.version ?? '0.0.0');
    if (now.prerelease === undefined) expect(compareVersions(now, last)).toBe(0);
    else expect(compareVersions(now, last)).toBeGreaterThan(0);
  });

  it("names commits of this history, whose package.json says the release's version", () => {
    const [newest, ...rest] = changelog.releases;
    // Only the release commit itself (package.json at that version) may not name itself yet.
    if (newest?.commit === 'pending') expect(currentVersion()).toBe(newest.version);
    for (const release of newest?.commit === 'pending' ? rest : changelog.releases) {
      const manifest = execFileSync('git', ['-C', REPO, 'show', `${release.commit}:package.json`], {
        encoding: 'utf8',
      });
      expect(JSON.parse(manifest).version, `package.json at ${release.commit}`).toBe(
        release.version,
      );
    }
  });

  it('is upgraded from in CI: the newest release before this version', () => {
    expect(previousRelease(changelog, '0.2.0-dev').version).toBe('0.1.0');
    expect(() => previousRelease(changelog, '0.1.0')).toThrow(
      'CHANGELOG.md records no release before 0.1.0',
    );
  });
});

describe('parseChangelog', () => {
  it('reads the unreleased lines and each release with its commit', () => {
    expect(
      parseChangelog(
        '# Changelog\n\n## Unreleased\n\n- one\n- two\n\n## 0.2.0 - 2027-01-02\n\nCommit: abcdef1\n\n- x\n\n## 0.1.0 - 2026-11-25\n\nCommit: 1234567\n',
      ),
    ).toEqual({
      unreleased: ['one', 'two'],
      releases: [
        { version: '0.2.0', date: '2027-01-02', commit: 'abcdef1' },
        { version: '0.1.0', date: '2026-11-25', commit: '1234567' },
      ],
    });
  });

  it('refuses a release heading it cannot read, naming the line', () => {
    expect(() => parseChangelog('# Changelog\n\n## v0.2 (soon)\n')).toThrow(
      "CHANGELOG.md line 3: a release is '## <version> - <YYYY-MM-DD>', got '## v0.2 (soon)'",
    );
  });

  it('reads a release commit that cannot name itself yet, and will not upgrade from it', () => {
    const pending = parseChangelog(
      '## 0.2.0 - 2027-01-02\n\nCommit: pending\n\n## 0.1.0 - 2026-11-25\n\nCommit: 1234567\n',
    );
    expect(pending.releases[0]?.commit).toBe('pending');
    expect(previousRelease(pending, '0.2.0').version).toBe('0.1.0');
    expect(() => previousRelease(pending, '0.3.0-dev')).toThrow(
      "CHANGELOG.md: release 0.2.0 still says 'Commit: pending'; record its commit",
    );
  });

  it('refuses a release that names no commit', () => {
    expect(() => parseChangelog('## 0.2.0 - 2027-01-02\n\n- x\n')).toThrow(
      "CHANGELOG.md: release 0.2.0 names no 'Commit: <hash>'",
    );
  });
});
