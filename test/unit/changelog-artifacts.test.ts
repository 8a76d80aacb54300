import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compareVersions, parseReleaseVersion } from '../../lib/domain/release-version.ts';
import { recordedArtifacts } from '../../packaging/release-record.ts';
import { readChangelog } from '../fixtures/previous-release.ts';

/**
 * From 0.2.0 on, a release's section in CHANGELOG.md lists its artifacts with their SHA-256
 * (scripts/release.ts prints the table), each named with the release's version: the npm
 * package, the agent's packages and the agent's bundle. 0.2.0 had one .deb and one .rpm for
 * every CPU (`all`, `noarch`: the bundle, run by the distribution's Node.js); from 0.3.0 on
 * there are two of each, x86_64 and aarch64, holding the agent's executable.
 */
const text = readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8');
const FIRST_WITH_ARTIFACTS = parseReleaseVersion('0.2.0');
const FIRST_WITH_EXECUTABLES = parseReleaseVersion('0.3.0');

function expectedArtifacts(version: string): string[] {
  const parsed = parseReleaseVersion(version);
  if (parsed && FIRST_WITH_EXECUTABLES && compareVersions(parsed, FIRST_WITH_EXECUTABLES) < 0) {
    return [
      `workload-registrar-${version}.tgz`,
      `registrar-agent_${version}_all.deb`,
      `registrar-agent-${version}-1.noarch.rpm`,
      `registrar-agent-${version}.mjs`,
    ];
  }
  return [
    `workload-registrar-${version}.tgz`,
    `registrar-agent_${version}_amd64.deb`,
    `registrar-agent_${version}_arm64.deb`,
    `registrar-agent-${version}-1.x86_64.rpm`,
    `registrar-agent-${version}-1.aarch64.rpm`,
    `registrar-agent-${version}.mjs`,
  ];
}

describe('CHANGELOG.md artifacts', () => {
  const releases = readChangelog().releases.filter((release) => {
    const version = parseReleaseVersion(release.version);
    return version && FIRST_WITH_ARTIFACTS && compareVersions(version, FIRST_WITH_ARTIFACTS) >= 0;
  });

  it('has releases that list artifacts (0.2.0 and later)', () => {
    expect(releases.map((r) => r.version)).toContain('0.2.0');
  });

  it.each(releases.filter((r) => r.commit !== 'pending').map((r) => [r.version]))(
    '%s lists its npm package, agent packages and bundle with a SHA-256 each',
    (version) => {
      expect(recordedArtifacts(text, version).map((row) => row.name)).toEqual(
        expectedArtifacts(version),
      );
    },
  );
});
