import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  utimesSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { type PackagedPath, sourcePath } from './agent-files.ts';
import type { AgentArch } from './agent-runtime.ts';

export interface AgentPackageBuild {
  /** The repository. */
  root: string;
  /**
   * The `bundle/<name>` sources: the executable of `arch` (packaging/agent-executable.ts
   * writes one folder per architecture).
   */
  bundleDir: string;
  /** The CPU the package is for; its executable must be built for it. */
  arch: AgentArch;
  outDir: string;
  /** package.json's version. */
  version: string;
  paths: readonly PackagedPath[];
  epochSeconds: number;
  /**
   * `xz` (the default, a release's) or `none`, for tests that build a package to install it and
   * drop it: xz takes ~11 s of CPU for the 119 MB executable, and dpkg and rpm install either.
   */
  compression?: PayloadCompression;
}

export type PayloadCompression = 'xz' | 'none';

/**
 * xz at level 1: 31 MB for the executable, against 27 MB at dpkg's default level 6 for six
 * times the CPU (~65 s a package on the 2-core build machine); every dpkg and rpm reads xz.
 */
export const XZ_LEVEL = 1;

/**
 * Lays out the listed files under `stage` as they will be installed (`/opt/...` becomes
 * `<stage>/opt/...`) with the listed modes, for dpkg-deb and rpmbuild to pack. Every path gets
 * the same time (SOURCE_DATE_EPOCH's when set): a rebuild of one commit is byte for byte the
 * same package, so a release's checksums can be checked by building it again. A program built
 * for another CPU than the package's is refused: an arm64 package holds arm64 code only.
 */
export function stageAgentTree(build: AgentPackageBuild, stage: string): void {
  // The tree's root becomes the archive's `./` (mkdtemp would make it 0700).
  mkdirSync(stage, { recursive: true });
  chmodSync(stage, 0o755);
  for (const path of build.paths) {
    const target = join(stage, path.target);
    if (path.kind === 'dir') {
      mkdirSync(target, { recursive: true });
    } else {
      const source = sourcePath(build.root, build.bundleDir, path.source ?? '');
      if (!existsSync(source)) {
        throw new Error(
          `packaging/agent-files.txt: source '${path.source}' does not exist (${source})`,
        );
      }
      const machine = elfMachine(source);
      if (machine !== undefined && machine !== build.arch) {
        throw new Error(
          `${source} is a program for ${machine}, not for ${build.arch}: it cannot go into the ${build.arch} package`,
        );
      }
      mkdirSync(dirname(target), { recursive: true });
      copyFileSync(source, target);
    }
    chmodSync(target, path.mode);
  }
  stampTree(stage, build.epochSeconds);
}

// e_machine of the ELF header (elf(5)): EM_X86_64 and EM_AARCH64.
const ELF_MACHINES: Record<number, AgentArch> = { 62: 'x86_64', 183: 'aarch64' };

/**
 * The CPU an ELF file is built for (its header's e_machine, read little-endian as both
 * architectures are), `other (<n>)` for another, or undefined when the file is not ELF.
 */
export function elfMachine(file: string): string | undefined {
  const header = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (header.readUInt32BE(0) !== 0x7f454c46) return undefined;
  const machine = header.readUInt16LE(18);
  return ELF_MACHINES[machine] ?? `other (${machine})`;
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
