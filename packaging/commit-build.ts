import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

/** One artifact of a build, with the sum a release lists it by. */
export interface BuiltArtifact {
  name: string;
  path: string;
  sha256: string;
}

export interface CommitBuild {
  /** The repository the commit is read from. */
  repo: string;
  /** Any revision git names (`HEAD`, a hash). */
  commit: string;
  outDir: string;
  /** Progress lines (the install takes about 30 s). */
  log?: (line: string) => void;
}

/**
 * The artifacts of a commit, built from the commit alone: its tree from `git archive`, its
 * lockfile's dependencies from `npm ci`, its own `packaging/build-artifacts.ts`, every file time
 * the commit's. A checkout's node_modules is never used: one installed for another lockfile (a
 * branch's upgrade, a shared install) bundles other code under the same version, and the sums
 * it gives cannot be rebuilt by anyone else. 0.2.0's first recorded sums were such a build.
 *
 * `buildArtifacts({ root, outDir, epochSeconds })` is the contract with the commit's tree: every
 * release from 0.2.0 on has it, so `npm run release -- --check` rebuilds an older release with
 * its own code.
 */
export function buildFromCommit(build: CommitBuild): BuiltArtifact[] {
  const log = build.log ?? (() => {});
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', build.repo, ...args], { encoding: 'utf8' }).trim();
  const commit = git('rev-parse', '--verify', `${build.commit}^{commit}`);
  const epochSeconds = Number(git('log', '-1', '--format=%ct', commit));
  const tree = mkdtempSync(join(tmpdir(), `registrar-release-${commit.slice(0, 12)}-`));
  try {
    execFileSync(
      'sh',
      ['-c', 'git -C "$REPO" archive --format=tar "$COMMIT" | tar -x -C "$TREE"'],
      {
        env: { ...process.env, REPO: build.repo, COMMIT: commit, TREE: tree },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    log(`npm ci of ${commit.slice(0, 12)} in ${tree}`);
    try {
      execFileSync('npm', ['ci', '--no-audit', '--no-fund'], {
        cwd: tree,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    } catch (error) {
      const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim();
      throw new Error(
        `npm ci of ${commit.slice(0, 12)} failed (a release build needs the npm registry, or its packages in npm's cache): ${stderr.split('\n').slice(-3).join(' ')}`,
      );
    }
    mkdirSync(build.outDir, { recursive: true });
    log(
      `building ${commit.slice(0, 12)}'s artifacts at ${new Date(epochSeconds * 1000).toISOString()}`,
    );
    // The commit's own code, in a process of its own: a .ts module of the tree, not of this one.
    const script = [
      "const { buildArtifacts, artifactNames } = await import('./packaging/build-artifacts.ts');",
      'const built = await buildArtifacts({ root: process.cwd(), outDir: process.env.OUT_DIR, epochSeconds: Number(process.env.EPOCH) });',
      'process.stdout.write(JSON.stringify(Object.values(built)));',
    ].join('\n');
    const printed = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: tree,
      env: { ...process.env, OUT_DIR: build.outDir, EPOCH: String(epochSeconds) },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const paths = JSON.parse(printed.slice(printed.lastIndexOf('['))) as string[];
    return ordered(paths).map((path) => ({
      name: basename(path),
      path,
      sha256: createHash('sha256').update(readFileSync(path)).digest('hex'),
    }));
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
}

/**
 * The order a release lists them in: the npm package, the .deb(s), the .rpm(s), the bundle
 * (each kind in the order the commit's buildArtifacts returned them: x86_64 before aarch64).
 */
function ordered(paths: string[]): string[] {
  const rank = (path: string) =>
    [/\.tgz$/, /\.deb$/, /\.rpm$/, /\.mjs$/].findIndex((pattern) => pattern.test(path));
  return [...paths].sort((a, b) => rank(a) - rank(b));
}
