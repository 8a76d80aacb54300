import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What `npm test` needs beyond `npm ci`, checked before the run so that a missing piece is one
 * line naming how to get it, not a failure deep in a test. Outside CI the tests that need a
 * missing piece are skipped with that line; in CI (`CI=true`) a missing piece fails the run.
 */
export interface Prerequisite {
  name: string;
  /** Undefined when present; otherwise what is missing and the command that installs it. */
  missing: string | undefined;
  /** What runs without it. */
  without: string;
}

export const CHROMIUM_PATH = process.env.CHROMIUM ?? '/usr/bin/chromium';

export function chromiumMissing(path = CHROMIUM_PATH): string | undefined {
  return existsSync(path)
    ? undefined
    : `no Chromium at ${path}: install Debian's with 'sudo apt-get install chromium' (as .ci/run does), or set CHROMIUM to another Chromium binary`;
}

export function javaMissing(): string | undefined {
  const found = spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;
  return found
    ? undefined
    : "no 'java' on PATH: install Java 17 (for example 'sudo apt-get install openjdk-17-jre-headless')";
}

/**
 * The upgrade tests rebuild the previous release from this clone's history (`git archive` of
 * the commit CHANGELOG.md names) and install its dependencies from the npm registry (`npm ci`).
 * Once built (in `.registrar-releases/`) neither is needed again.
 */
export function previousReleaseMissing(repo: string): string | undefined {
  const cache = process.env.REGISTRAR_RELEASE_CACHE ?? join(repo, '.registrar-releases');
  const built =
    existsSync(cache) &&
    readdirSync(cache).some((name) => existsSync(join(cache, name, '.prepared')));
  if (built) return undefined;
  const shallow = spawnSync('git', ['-C', repo, 'rev-parse', '--is-shallow-repository'], {
    encoding: 'utf8',
  });
  if (shallow.status !== 0) {
    return 'not a git clone: the upgrade tests rebuild the previous release with git archive; clone the repository (with its history)';
  }
  if (shallow.stdout.trim() === 'true') {
    return "a shallow clone: the upgrade tests rebuild the previous release from its commit; run 'git fetch --unshallow'";
  }
  return undefined;
}

export function prerequisites(repo: string): Prerequisite[] {
  return [
    {
      name: 'Chromium',
      missing: chromiumMissing(),
      without: "the dashboard's browser tests are skipped",
    },
    {
      name: 'Java 17',
      missing: javaMissing(),
      without: 'the second run against DynamoDB Local is skipped',
    },
    {
      name: 'git history',
      missing: previousReleaseMissing(repo),
      without: 'the upgrade tests (release-upgrade, mixed-releases) are skipped',
    },
  ];
}
