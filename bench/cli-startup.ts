import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * How long `registrar` takes, start to exit, as an operator runs it (`node bin/registrar.js`,
 * a process each time): `--version`, `--help`, and `get we -A` against a local runtime (an
 * in-memory `npm start` with an empty registry). Issue 17's targets: --help < 150 ms,
 * get < 300 ms, median on an idle machine. Runs one after another, after one warm-up run each
 * (it fills Node's compile cache, as an operator's first run does).
 */
export interface CliStartupRow {
  command: string;
  runs: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
}

const bin = new URL('../bin/registrar.js', import.meta.url).pathname;
const runtimeMain = new URL('../infra/local/main.ts', import.meta.url).pathname;

export async function measureCliStartup(runs = 9): Promise<CliStartupRow[]> {
  const cwd = await mkdtemp(join(tmpdir(), 'bench-cli-'));
  // Neither the runtime nor the CLI may pick up the caller's registry settings.
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(REGISTRAR_|AWS_REGION$)/.test(name)),
  );
  const runtime = spawn(process.execPath, [runtimeMain, '--port', '0', '--memory'], {
    cwd,
    env: clean,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const dataDir = await bannerDataDir(runtime);
    const env = { ...clean, REGISTRAR_DATA_DIR: dataDir };
    const commands = [['--version'], ['--help'], ['get', 'we', '-A']];
    return commands.map((args) => timeCommand(args, env, cwd, runs));
  } finally {
    runtime.kill('SIGINT');
    await new Promise((resolve) => runtime.once('exit', resolve));
    await rm(cwd, { recursive: true, force: true });
  }
}

/** The runtime's data directory, from its banner's `export REGISTRAR_DATA_DIR=...`. */
function bannerDataDir(runtime: ReturnType<typeof spawn>): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no banner within 30 s:\n${out}`)), 30_000);
    timer.unref();
    runtime.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /REGISTRAR_DATA_DIR=(\S+?)\)/.exec(out);
      if (match?.[1] && out.includes('Press Ctrl-C')) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    runtime.once('exit', (code) =>
      reject(new Error(`the local runtime exited (${code}):\n${out}`)),
    );
  });
}

function timeCommand(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  runs: number,
): CliStartupRow {
  const once = () => {
    const started = performance.now();
    const result = spawnSync(process.execPath, [bin, ...args], { env, cwd, encoding: 'utf8' });
    const ms = performance.now() - started;
    if (result.status !== 0) {
      throw new Error(`registrar ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    }
    return ms;
  };
  once();
  const times = Array.from({ length: runs }, once).sort((a, b) => a - b);
  return {
    command: `registrar ${args.join(' ')}`,
    runs,
    medianMs: times[Math.floor(runs / 2)] ?? 0,
    minMs: times[0] ?? 0,
    maxMs: times[runs - 1] ?? 0,
  };
}
