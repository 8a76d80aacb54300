import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { readAgentFiles } from './agent-files.ts';
import { projectVersion } from './agent-package.ts';
import { buildDeb } from './deb-package.ts';
import { buildNpmPackage } from './npm-package.ts';
import { buildRpm } from './rpm-package.ts';

export interface Artifacts {
  npm: string;
  deb: string;
  rpm: string;
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
 * Every artifact of a release, into `outDir`: the npm package (CLI and agent), the agent's
 * .deb and .rpm, and the agent's bundle on its own (for an AMI bake or the manual install).
 * Needs the checkout's dev dependencies (esbuild), dpkg-deb and rpmbuild.
 */
export async function buildArtifacts(build: ArtifactsBuild): Promise<Artifacts> {
  const version = build.version ?? projectVersion(build.root);
  const paths = readAgentFiles(build.root);
  const bundleDir = mkdtempSync(join(tmpdir(), 'registrar-agent-bundle-'));
  try {
    execFileSync('sh', [join(build.root, 'packaging/build-agent.sh')], {
      env: { ...process.env, OUT_DIR: bundleDir },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    mkdirSync(build.outDir, { recursive: true });
    const agentBundle = join(build.outDir, `registrar-agent-${version}.mjs`);
    copyFileSync(join(bundleDir, 'registrar-agent.mjs'), agentBundle);
    const packages = { ...build, bundleDir, version, paths };
    const deb = buildDeb(packages);
    const rpm = buildRpm(packages);
    const npm = await buildNpmPackage({
      root: build.root,
      agentBundle,
      outDir: build.outDir,
      version,
      epochSeconds: build.epochSeconds,
    });
    return { npm, deb, rpm, agentBundle };
  } finally {
    rmSync(bundleDir, { recursive: true, force: true });
  }
}

/** The artifacts' file names, in the order a release lists them. */
export function artifactNames(artifacts: Artifacts): string[] {
  return [artifacts.npm, artifacts.deb, artifacts.rpm, artifacts.agentBundle].map((p) =>
    basename(p),
  );
}
