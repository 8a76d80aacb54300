import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compareVersions, parseReleaseVersion } from '../../lib/domain/release-version.ts';
import { recordedArtifacts } from '../../packaging/release-record.ts';
import { readChangelog } from '../fixtures/previous-release.ts';

/**
 * From 0.2.0 on, a release's section in CHANGELOG.md lists its four artifacts with their
 * SHA-256 (scripts/release.ts prints the table): the npm package, the agent's .deb and .rpm, and
 * the agent's bundle, each named with the release's version.
 */
const text = readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8');
const FIRST_WITH_ARTIFACTS = parseReleaseVersion('0.2.0');

describe('CHANGELOG.md artifacts', () => {
  const releases = readChangelog().releases.filter((release) => {
    const version = parseReleaseVersion(release.version);
    return version && FIRST_WITH_ARTIFACTS && compareVersions(version, FIRST_WITH_ARTIFACTS) >= 0;
  });

  it('has releases that list artifacts (0.2.0 and later)', () => {
    expect(releases.map((r) => r.version)).toContain('0.2.0');
  });

  it.each(releases.filter((r) => r.commit !== 'pending').map((r) => [r.version]))(
    '%s lists its npm package, .deb, .rpm and bundle with a SHA-256 each',
    (version) => {
      expect(recordedArtifacts(text, version).map((row) => row.name)).toEqual([
        `workload-registrar-${version}.tgz`,
        `registrar-agent_${version}_all.deb`,
        `registrar-agent-${version}-1.noarch.rpm`,
        `registrar-agent-${version}.mjs`,
      ]);
    },
  );
});
