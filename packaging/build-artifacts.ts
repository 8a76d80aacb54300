import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { buildAgentExecutables } from './agent-executable.ts';
import { readAgentFiles } from './agent-files.ts';
import { projectVersion } from './agent-package.ts';
import type { AgentArch } from './agent-runtime.ts';
import { buildDeb } from './deb-package.ts';
import { buildNpmPackage } from './npm-package.ts';
import { buildRpm } from './rpm-package.ts';

/**
 * A release's files, each a path (flat: packaging/commit-build.ts lists a commit's artifacts
 * with `Object.values`, for every release since 0.2.0).
 */
export interface Artifacts {
  npm: string;
  debX86_64: string;
  debAarch64: string;
  rpmX86_64: string;
  rpmAarch64: string;
  agentBundle: string;
}

export interface ArtifactsBuild {
  root: string;
  outDir: string;
  epochSeconds: number;
  /** package.json's unless given (tests build two versions to upgrade from one to the other). */
  version?: string;
}

/**
 * Every artifact of a release, into `outDir`: the npm package (CLI and agent), the agent's .deb
 * and .rpm for x86_64 and aarch64 (each with the agent's executable, which needs no Node.js),
 * and the agent's bundle on its own (the npm package's agent, for a VM that has Node.js 22).
 * Needs the checkout's dev dependencies (esbuild, postject), the npm registry or npm's cache
 * (the pinned Node.js of each architecture, packaging/agent-runtime.ts), dpkg-deb and rpmbuild.
 */
export async function buildArtifacts(build: ArtifactsBuild): Promise<Artifacts> {
  const version = build.version ?? projectVersion(build.root);
  const paths = readAgentFiles(build.root);
  const work = mkdtempSync(join(tmpdir(), 'registrar-agent-build-'));
  try {
    const bundleDir = join(work, 'bundle');
    execFileSync('sh', [join(build.root, 'packaging/build-agent.sh')], {
      env: { ...process.env, OUT_DIR: bundleDir },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    mkdirSync(build.outDir, { recursive: true });
    const agentBundle = join(build.outDir, `registrar-agent-${version}.mjs`);
    copyFileSync(join(bundleDir, 'registrar-agent.mjs'), agentBundle);
    const executables = join(work, 'executables');
    await buildAgentExecutables({ root: build.root, outDir: executables });
    const packages = (arch: AgentArch) => ({
      ...build,
      bundleDir: join(executables, arch),
      arch,
      version,
      paths,
    });
    const debX86_64 = buildDeb(packages('x86_64'));
    const debAarch64 = buildDeb(packages('aarch64'));
    const rpmX86_64 = buildRpm(packages('x86_64'));
    const rpmAarch64 = buildRpm(packages('aarch64'));
    const npm = await buildNpmPackage({
      root: build.root,
      agentBundle,
      outDir: build.outDir,
      version,
      epochSeconds: build.epochSeconds,
    });
    return { npm, debX86_64, debAarch64, rpmX86_64, rpmAarch64, agentBundle };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The artifacts' file names, in the order a release lists them. */
export function artifactNames(artifacts: Artifacts): string[] {
  return [
    artifacts.npm,
    artifacts.debX86_64,
    artifacts.debAarch64,
    artifacts.rpmX86_64,
    artifacts.rpmAarch64,
    artifacts.agentBundle,
  ].map((p) => basename(p));
}
