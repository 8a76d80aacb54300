import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stampTree } from './agent-stage.ts';
import { bundleCli } from './cli-bundle.ts';

export const NPM_PACKAGE_NAME = 'workload-registrar';

export interface NpmPackageBuild {
  root: string;
  /** The agent's bundle (packaging/build-agent.sh). */
  agentBundle: string;
  outDir: string;
  version: string;
  epochSeconds: number;
}

/**
 * workload-registrar-<version>.tgz, packed by `npm pack` from a folder laid out here:
 *
 *   package.json   bin: registrar, registrar-agent; no dependencies (both are bundles)
 *   cli/           the CLI's bundle, split at its dynamic imports (cli-bundle.ts)
 *   agent/         the agent's single-file bundle, as the DEB and RPM install it
 *   dist/          the dashboard's built page (`registrar dashboard`)
 *   README.md      packaging/npm-readme.md
 *
 * `npm start`'s local runtime is not in it: it is the project's development registrar, with
 * dynalite and the Lambda handlers, and runs from a checkout; the package is for operating a
 * registrar (AWS's, or a checkout's `npm start` with REGISTRAR_DATA_DIR) and for VMs.
 */
export async function buildNpmPackage(build: NpmPackageBuild): Promise<string> {
  const stage = mkdtempSync(join(tmpdir(), 'registrar-npm-'));
  try {
    await bundleCli(build.root, join(stage, 'cli'));
    mkdirSync(join(stage, 'agent'));
    cpSync(build.agentBundle, join(stage, 'agent/registrar-agent.mjs'));
    // Built by `npm ci` (prepare) in every checkout: the page the CLI's dashboard serves.
    cpSync(join(build.root, 'dashboard/dist'), join(stage, 'dist'), { recursive: true });
    cpSync(join(build.root, 'packaging/npm-readme.md'), join(stage, 'README.md'));
    writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest(build), null, 2)}\n`);
    stampTree(stage, build.epochSeconds);
    mkdirSync(build.outDir, { recursive: true });
    const output = execFileSync(
      'npm',
      ['pack', '--json', '--pack-destination', build.outDir, '--ignore-scripts'],
      { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [packed] = JSON.parse(output) as { filename: string }[];
    if (!packed) throw new Error(`npm pack printed no package: ${output}`);
    return join(build.outDir, packed.filename);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

function manifest(build: NpmPackageBuild): Record<string, unknown> {
  return {
    name: NPM_PACKAGE_NAME,
    version: build.version,
    description:
      'The workload-registrar CLI (registrar) and EC2 agent (registrar-agent): WorkloadEntry auto-registration for VMs in a service mesh',
    type: 'module',
    license: 'Apache-2.0',
    // Bundles, already JavaScript: any Node.js 22 (esbuild's target); each bin checks it first.
    engines: { node: '>=22' },
    bin: { registrar: 'cli/registrar.mjs', 'registrar-agent': 'agent/registrar-agent.mjs' },
  };
}
