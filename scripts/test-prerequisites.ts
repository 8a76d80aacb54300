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

/** Where Debian's cross packages put the aarch64 C and C++ libraries qemu-user runs with. */
export const AARCH64_SYSROOT = process.env.AARCH64_SYSROOT ?? '/usr/aarch64-linux-gnu';
const AARCH64_PACKAGES =
  'qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross';

/** qemu's aarch64 emulator on PATH: qemu-user-static's or qemu-user's. */
export function qemuAarch64(): string | undefined {
  for (const name of ['qemu-aarch64-static', 'qemu-aarch64']) {
    const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
    if (found.status === 0) return found.stdout.trim();
  }
  return undefined;
}

/**
 * The agent's aarch64 executable runs here under qemu-user, with the aarch64 glibc and
 * libstdc++ of Debian's cross packages (test/integration/agent-executable.test.ts).
 */
export function qemuAarch64Missing(): string | undefined {
  const install = `install Debian's with 'sudo apt-get install ${AARCH64_PACKAGES}' (as .ci/run does)`;
  if (qemuAarch64() === undefined) return `no qemu-aarch64 on PATH: ${install}`;
  if (!existsSync(join(AARCH64_SYSROOT, 'lib/libstdc++.so.6'))) {
    return `no aarch64 libraries in ${AARCH64_SYSROOT}: ${install}`;
  }
  return undefined;
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
      name: 'qemu-user (aarch64)',
      missing: qemuAarch64Missing(),
      without: "the agent's aarch64 executable is built but not run",
    },
    {
      name: 'git history',
      missing: previousReleaseMissing(repo),
      without: 'the upgrade tests (release-upgrade, mixed-releases) are skipped',
    },
  ];
}
