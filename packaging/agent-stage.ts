import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type PackagedPath, sourcePath } from './agent-files.ts';

/**
 * Lays out the listed files under `stage` as they will be installed (`/opt/...` becomes
 * `<stage>/opt/...`) with the listed modes, for dpkg-deb and rpmbuild to pack. Every path gets
 * the same time (SOURCE_DATE_EPOCH's when set): a rebuild of one commit is byte for byte the
 * same package, so a release's checksums can be checked by building it again.
 */
export function stageAgentTree(
  root: string,
  bundleDir: string,
  stage: string,
  paths: readonly PackagedPath[],
  epochSeconds: number,
): void {
  // The tree's root becomes the archive's `./` (mkdtemp would make it 0700).
  mkdirSync(stage, { recursive: true });
  chmodSync(stage, 0o755);
  for (const path of paths) {
    const target = join(stage, path.target);
    if (path.kind === 'dir') {
      mkdirSync(target, { recursive: true });
    } else {
      const source = sourcePath(root, bundleDir, path.source ?? '');
      if (!existsSync(source)) {
        throw new Error(
          `packaging/agent-files.txt: source '${path.source}' does not exist (${source})`,
        );
      }
      mkdirSync(dirname(target), { recursive: true });
      copyFileSync(source, target);
    }
    chmodSync(target, path.mode);
  }
  stampTree(stage, epochSeconds);
}

/** Gives every path under `dir` the same modification time. */
export function stampTree(dir: string, seconds: number): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) stampTree(path, seconds);
    utimesSync(path, seconds, seconds);
  }
  utimesSync(dir, seconds, seconds);
}

/** SOURCE_DATE_EPOCH (reproducible-builds.org) or, unset, now. */
export function sourceDateEpoch(env: NodeJS.ProcessEnv = process.env): number {
  const value = env.SOURCE_DATE_EPOCH;
  if (value === undefined || value === '') return Math.floor(Date.now() / 1000);
  if (!/^\d+$/.test(value)) {
    throw new Error(`SOURCE_DATE_EPOCH '${value}' is not a number of seconds since 1970`);
  }
  return Number(value);
}
