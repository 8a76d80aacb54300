import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAgentExecutables } from '../packaging/agent-executable.ts';
import { AGENT_NODE_FLAGS, fetchNodeRuntime, hostArch } from '../packaging/agent-runtime.ts';
import { waitFor } from '../test/fixtures/agent-targets.ts';
import { memoryCage, memoryCageAvailable } from '../test/fixtures/memory-cgroup.ts';

/**
 * The agent as one executable, against the bundle it replaces: each candidate is built from
 * this checkout for this machine's CPU and run as its own process against the local runtime in
 * this process (`npm run bench -- agent-exe`).
 *
 * - `bundle on node`: what 0.2.0's packages ran, the bundle (packaging/build-agent.sh) on the
 *   same pinned Node.js release as the executable, with the same V8 flags.
 * - `node SEA`: the packages' executable (packaging/agent-executable.ts).
 * - `bun --compile`: with BENCH_BUN=<path to a bun binary> (not a dependency of the project:
 *   `npm install --prefix <dir> @oven/bun-linux-x64`), `bun build --compile` of the same bundle.
 *
 * Per candidate: its size on disk and xz -1'd (what a package holds), `--version` (median of
 * BENCH_EXE_VERSION_RUNS runs with its files in the page cache, and the first run after they
 * were dropped from it, as after a boot), the time from start to registered, and resident
 * memory read from /proc/<pid>/status: started but not connected (a registrar that refuses the
 * TCP connection), registered and idle 3 s (no reclaim), and, where a memory cgroup of its own
 * can be made (root, cgroup v1: test/fixtures/memory-cgroup.ts), 3 s after it gave its start-up
 * memory back (the unit's --memory-reclaim-after, here 1 s). Before each memory run the
 * candidate's files are dropped from the page cache, so its pages are read as after a boot.
 * BENCH_EXE_RUNS rounds (default 3) alternate the candidates; medians are printed.
 */
export interface ExecutableRow {
  candidate: string;
  sizeMb: number;
  compressedMb: number | undefined;
  versionWarmMs: number;
  versionColdMs: number;
  registeredMs: number;
  rssUnconnectedMb: number;
  rssRegisteredMb: number;
  anonRegisteredMb: number;
  fileRegisteredMb: number;
  rssAfterReclaimMb: number | undefined;
}

interface Candidate {
  name: string;
  /** The program and the arguments before the agent's own. */
  program: string;
  prefix: string[];
  /** What is read from disk to run it. */
  files: string[];
  /** What a package of it compresses. */
  packaged: string[];
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.BENCH_EXE_RUNS ?? 3);
const VERSION_RUNS = Number(process.env.BENCH_EXE_VERSION_RUNS ?? 15);

export async function measureAgentExecutables(): Promise<ExecutableRow[]> {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  const arch = hostArch();
  if (arch === undefined) throw new Error(`no agent executable for ${process.arch}`);
  const work = mkdtempSync(join(tmpdir(), 'agent-exe-bench-'));
  const { startAgentTestbed, entryName } = await import('../test/fixtures/agent-testbed.ts');
  const bed = await startAgentTestbed();
  try {
    await bed.applyGroup('web');
    execFileSync('sh', [join(ROOT, 'packaging/build-agent.sh')], {
      env: { ...process.env, OUT_DIR: join(work, 'bundle') },
      stdio: 'ignore',
    });
    const bundle = join(work, 'bundle/registrar-agent.mjs');
    const node = fetchNodeRuntime(arch, join(work, 'node'));
    const sea = (
      await buildAgentExecutables({ root: ROOT, outDir: join(work, 'sea'), arches: [arch] })
    )[arch];
    const candidates: Candidate[] = [
      {
        name: 'bundle on node',
        program: node,
        prefix: [...AGENT_NODE_FLAGS, bundle],
        files: [node, bundle],
        packaged: [bundle],
      },
      { name: 'node SEA', program: sea, prefix: [], files: [sea], packaged: [sea] },
    ];
    const bun = process.env.BENCH_BUN;
    if (bun) {
      const output = join(work, 'bun/registrar-agent');
      execFileSync(
        bun,
        [
          'build',
          '--compile',
          '--minify-whitespace',
          '--minify-syntax',
          '--outfile',
          output,
          bundle,
        ],
        {
          stdio: 'ignore',
          env: { ...process.env, BUN_INSTALL_CACHE_DIR: join(work, 'bun-cache') },
        },
      );
      candidates.push({
        name: 'bun --compile',
        program: output,
        prefix: [],
        files: [output],
        packaged: [output],
      });
    }
    const closedPort = await unusedPort();
    const samples = new Map<string, Record<string, number[]>>();
    const add = (name: string, key: string, value: number | undefined) => {
      if (value === undefined) return;
      const row = samples.get(name) ?? {};
      row[key] = [...(row[key] ?? []), value];
      samples.set(name, row);
    };
    let address = 0;
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const candidate of candidates) {
        const run = (args: string[]) => [...candidate.prefix, ...args];
        // Start-up: the first run after the files left the page cache, then warm runs.
        dropFromPageCache(candidate.files);
        add(candidate.name, 'versionCold', timeRun(candidate.program, run(['--version'])));
        for (let i = 0; i < Math.ceil(VERSION_RUNS / ROUNDS); i += 1) {
          add(candidate.name, 'versionWarm', timeRun(candidate.program, run(['--version'])));
        }
        // Started, nothing to connect to: the runtime and the agent's code, no connection.
        dropFromPageCache(candidate.files);
        const unconnected = start(
          candidate.program,
          run(agentArgs(`ws://127.0.0.1:${closedPort}`, '10.9.0.1', '0')),
          bed.token,
        );
        await waitFor(
          () => unconnected.stderr().includes('"level":"warn"') || undefined,
          `${candidate.name} to fail its first connect`,
          30_000,
        );
        await sleep(3_000);
        add(candidate.name, 'rssUnconnected', status(unconnected.child.pid)?.rss);
        await stop(unconnected.child);
        // Registered, idle, keeping its start-up memory.
        address += 1;
        const ip = `10.9.1.${address}`;
        dropFromPageCache(candidate.files);
        const started = performance.now();
        const agent = start(candidate.program, run(agentArgs(bed.runtime.url, ip, '0')), bed.token);
        await waitFor(
          async () => (await bed.entry(entryName('web', ip)))?.connected || undefined,
          `${candidate.name} to register`,
          30_000,
        );
        add(candidate.name, 'registered', performance.now() - started);
        await waitFor(
          () => agent.stderr().includes('registered as') || undefined,
          `${candidate.name} to log its registration`,
        );
        await sleep(3_000);
        const idle = status(agent.child.pid);
        add(candidate.name, 'rssRegistered', idle?.rss);
        add(candidate.name, 'anonRegistered', idle?.anon);
        add(candidate.name, 'fileRegistered', idle?.file);
        await stop(agent.child);
        // The same, in a memory cgroup of its own, after it gave its start-up memory back.
        if (memoryCageAvailable()) {
          address += 1;
          const cagedIp = `10.9.1.${address}`;
          const cage = memoryCage(undefined, candidate.program);
          try {
            const caged = start(
              cage.command,
              cage.args(run(agentArgs(bed.runtime.url, cagedIp, '1s'))),
              bed.token,
            );
            await waitFor(
              () => caged.stderr().includes('start-up memory') || undefined,
              `${candidate.name} to give its start-up memory back`,
              60_000,
            );
            await sleep(3_000);
            const line =
              caged
                .stderr()
                .split('\n')
                .find((l) => l.includes('start-up memory')) ?? '';
            add(
              candidate.name,
              'rssAfterReclaim',
              line.includes('rssAfterMb') ? status(caged.child.pid)?.rss : undefined,
            );
            await stop(caged.child);
          } finally {
            cage.close();
          }
        }
      }
    }
    return candidates.map((candidate) => {
      const row = samples.get(candidate.name) ?? {};
      const m = (key: string) => median(row[key] ?? []);
      return {
        candidate: candidate.name,
        sizeMb: round(
          candidate.files.reduce((sum, file) => sum + statSync(file).size, 0) / 1048576,
        ),
        compressedMb: compressedMb(candidate.packaged),
        versionWarmMs: Math.round(m('versionWarm') ?? 0),
        versionColdMs: Math.round(m('versionCold') ?? 0),
        registeredMs: Math.round(m('registered') ?? 0),
        rssUnconnectedMb: round(m('rssUnconnected') ?? 0),
        rssRegisteredMb: round(m('rssRegistered') ?? 0),
        anonRegisteredMb: round(m('anonRegistered') ?? 0),
        fileRegisteredMb: round(m('fileRegistered') ?? 0),
        rssAfterReclaimMb:
          m('rssAfterReclaim') === undefined ? undefined : round(m('rssAfterReclaim') ?? 0),
      };
    });
  } finally {
    await bed.close();
    rmSync(work, { recursive: true, force: true });
  }
}

function agentArgs(url: string, ip: string, reclaimAfter: string): string[] {
  return [
    ...['--url', url, '--group', 'web', '--namespace', 'shop', '--ip', ip, '--no-imds'],
    ...['--log-format', 'json', '--drain-delay', '0', '--memory-reclaim-after', reclaimAfter],
  ];
}

function start(
  program: string,
  args: string[],
  token: string,
): { child: ChildProcess; stderr: () => string } {
  const child = spawn(program, args, {
    env: { PATH: process.env.PATH, REGISTRAR_AGENT_TOKEN: token },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { child, stderr: () => text };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Milliseconds of one run to its exit. */
function timeRun(program: string, args: string[]): number {
  const started = performance.now();
  const run = spawnSync(program, args, { stdio: 'ignore' });
  if (run.status !== 0) throw new Error(`${program} ${args.join(' ')} exited ${run.status}`);
  return performance.now() - started;
}

/** Written back and dropped from the page cache (posix_fadvise DONTNEED through dd). */
function dropFromPageCache(files: readonly string[]): void {
  for (const file of files) {
    execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  }
}

function status(pid: number | undefined): { rss: number; anon: number; file: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)?.[1] ?? 0);
    return {
      rss: kb('VmRSS') / 1024,
      anon: kb('RssAnon') / 1024,
      file: (kb('RssFile') + kb('RssShmem')) / 1024,
    };
  } catch {
    return undefined;
  }
}

/** xz -1 of the files, as the packages compress them (packaging/agent-stage.ts), if xz is here. */
function compressedMb(files: readonly string[]): number | undefined {
  let bytes = 0;
  for (const file of files) {
    const run = spawnSync('sh', ['-c', 'xz -1 -T1 -c "$1" | wc -c', 'sh', file], {
      encoding: 'utf8',
    });
    if (run.status !== 0) return undefined;
    bytes += Number(run.stdout.trim());
  }
  return round(bytes / 1048576);
}

function unusedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await measureAgentExecutables(), null, 2));
}
