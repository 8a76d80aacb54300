import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import {
  AGENT_ARCHES,
  AGENT_NODE_FLAGS,
  type AgentArch,
  fetchNodeRuntime,
  hostArch,
} from './agent-runtime.ts';

/** The file name of the executable, in the packages (`/opt/registrar-agent/registrar-agent`). */
export const AGENT_EXECUTABLE = 'registrar-agent';
/** Where Node.js looks for a single executable application's script (its documented fuse). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export interface ExecutablesBuild {
  root: string;
  /** Gets `<dir>/<arch>/registrar-agent` for each architecture. */
  outDir: string;
  arches?: readonly AgentArch[];
}

/**
 * The agent as one executable per architecture, which needs no Node.js on the VM: Node.js's
 * single executable application (SEA) built on the pinned Node.js of packaging/agent-runtime.ts.
 *
 * 1. esbuild bundles agent/executable-main.ts as CommonJS (a SEA's script must be), with the
 *    same settings as the bundle of packaging/build-agent.sh: the same code as the npm package's
 *    agent, in another module format.
 * 2. The pinned Node.js of this machine's architecture writes the SEA blob: the script and the
 *    V8 flags the unit used to pass (AGENT_NODE_FLAGS). Without a code cache or a snapshot the
 *    blob is the same bytes for every architecture (test/integration/agent-executable.test.ts).
 * 3. postject (Node.js's own injector) puts the blob into a copy of each architecture's
 *    `node`. The result is the same bytes for the same sources: a release can be rebuilt.
 *
 * Bun's `bun build --compile` was measured against this and not taken (docs/benchmarks.md,
 * "The agent's executable").
 */
export async function buildAgentExecutables(
  build: ExecutablesBuild,
): Promise<Record<AgentArch, string>> {
  const arches = build.arches ?? AGENT_ARCHES;
  const builder = hostArch();
  if (builder === undefined) {
    throw new Error(
      `the agent's executables are built on x86_64 or aarch64 (the SEA blob is written by the pinned Node.js of this machine's architecture); this is ${process.arch}`,
    );
  }
  const work = mkdtempSync(join(tmpdir(), 'registrar-agent-sea-'));
  try {
    await bundleForSea(build.root, join(work, 'registrar-agent.cjs'));
    const blob = join(work, 'registrar-agent.blob');
    // Paths relative to the folder node runs in: the blob records the script's name, and a
    // temporary folder's would make every build different bytes.
    writeFileSync(
      join(work, 'sea-config.json'),
      JSON.stringify({
        main: 'registrar-agent.cjs',
        output: 'registrar-agent.blob',
        disableExperimentalSEAWarning: true,
        useSnapshot: false,
        useCodeCache: false,
        execArgv: AGENT_NODE_FLAGS,
      }),
    );
    const runtimes = join(work, 'runtimes');
    const builderNode = fetchNodeRuntime(builder, join(runtimes, builder));
    execFileSync(builderNode, ['--experimental-sea-config', 'sea-config.json'], {
      cwd: work,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
    const built = {} as Record<AgentArch, string>;
    for (const arch of arches) {
      const node = arch === builder ? builderNode : fetchNodeRuntime(arch, join(runtimes, arch));
      const target = join(build.outDir, arch, AGENT_EXECUTABLE);
      mkdirSync(join(build.outDir, arch), { recursive: true });
      copyFileSync(node, target);
      chmodSync(target, 0o755);
      try {
        execFileSync(
          process.execPath,
          [postject, target, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE],
          { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
        );
      } catch (error) {
        const { stdout, stderr } = error as { stdout?: string; stderr?: string };
        throw new Error(`postject could not make the ${arch} executable: ${stderr}${stdout}`);
      }
      built[arch] = target;
    }
    return built;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The agent as one CommonJS file. A warning fails the build: it means esbuild changed what
 * the code does in this format (an `import.meta` left empty, a top-level await), and the
 * executable would behave otherwise than the bundle the tests run.
 */
async function bundleForSea(root: string, outfile: string): Promise<void> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'agent/executable-main.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    minifyWhitespace: true,
    minifySyntax: true,
    outfile,
    logLevel: 'silent',
  });
  if (result.warnings.length > 0) {
    throw new Error(
      `esbuild warned while bundling the agent for its executable: ${result.warnings
        .map(
          (warning) =>
            `${warning.location?.file ?? ''}:${warning.location?.line ?? ''} ${warning.text}`,
        )
        .join('; ')}`,
    );
  }
}
