import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAgentExecutables } from '../packaging/agent-executable.ts';
import { hostArch } from '../packaging/agent-runtime.ts';
import { startHttpTarget } from '../test/fixtures/agent-targets.ts';
import { unitNodeFlags } from '../test/fixtures/agent-unit.ts';
import { memoryCage, memoryCageAvailable } from '../test/fixtures/memory-cgroup.ts';

/**
 * The agent's memory over an hour-equivalent of work, measured on the real program: the
 * `registrar-agent` binary runs as its own process (so its RSS is only the agent's) against
 * the local runtime in this process, probing a real HTTP server that flips between 200 and
 * 500. Probe seconds are scaled by 0.01 (periodSeconds 1 -> 10 ms), so 3,600 probes, an hour
 * of a 1-second probe, take about 40 s; the connection is rotated every ~1 s instead of every
 * ~100 min, so the run also holds far more rotations than a real hour (or week).
 * RSS is read from /proc/<pid>/status every 500 ms; "flat" means the last quarter of the run
 * is not above the second quarter by more than noise. The V8 heap after a forced GC, logged by
 * a preloaded module every 10 s, tells a leak (it keeps growing) from allocator slack.
 * BENCH_AGENT_BUNDLE=1 measures the single-file bundle (packaging/build-agent.sh) instead of
 * the TypeScript sources, with the Node flags the executable has built in (what 0.2.0's unit
 * passed to node); BENCH_AGENT_NODE_FLAGS (space-separated, may be empty) replaces those flags.
 * BENCH_AGENT_EXECUTABLE=1 measures the packages' executable for this machine's CPU
 * (packaging/agent-executable.ts, the shipped form since 0.3.0), BENCH_AGENT_EXECUTABLE=<path>
 * another one (a `bun build --compile` of the bundle, bench/agent-executable.ts): the heap is
 * logged through NODE_OPTIONS (`--require`), which a Node.js executable honours and Bun does
 * not (its heap columns stay 0).
 * CPU is the process's user + system time from /proc/<pid>/stat, divided by the probes, and
 * major faults are its reads of pages from disk (a page dropped under a memory limit and needed
 * again).
 * Where the machine allows (root, a cgroup v1 memory controller), the agent runs in a memory
 * cgroup of its own, as the systemd unit runs it (test/fixtures/memory-cgroup.ts), and gives
 * its start-up memory back BENCH_AGENT_RECLAIM_AFTER after registering (default 2s, about the
 * unit's 1m in this hour scaled to 40 s; 0 turns it off, for the figure without it).
 * Elsewhere it shares the bench's cgroup and keeps that memory (`cgroup: 'shared'`).
 * BENCH_AGENT_MEMORY_LIMIT_MB also caps that cgroup, as `MemoryHigh=` would.
 */
export interface AgentMemory {
  program: 'sources' | 'bundle' | 'executable';
  nodeFlags: string[];
  durationS: number;
  probes: number;
  rotations: number;
  healthTransitions: number;
  samples: number;
  rssAfterWarmupMb: number;
  rssEndMb: number;
  rssMaxMb: number;
  /** Mean RSS of the last quarter minus the mean of the second quarter. */
  rssGrowthMb: number;
  /** Mean RSS of each quarter of the run: flat, or levelling off, is what matters. */
  rssByQuarterMb: number[];
  heapAfterGcFirstMb: number;
  heapAfterGcWarmupMb: number;
  heapAfterGcEndMb: number;
  /** User + system CPU of the whole run (start-up included), and per probe. */
  cpuS: number;
  cpuMsPerProbe: number;
  /** The same after the first quarter: the steady cost, without start-up (or the reclaim). */
  cpuMsPerProbeAfterWarmup: number;
  /** At the end: anonymous memory (heaps, code, buffers) and mapped files (mostly node itself). */
  rssAnonEndMb: number;
  rssFileEndMb: number;
  /** Pages read back from disk: in the whole run, and after the first quarter. */
  majorFaults: number;
  majorFaultsAfterWarmup: number;
  /** The agent's own cgroup (as under systemd), or the bench's (where none can be made). */
  cgroup: 'own' | 'shared';
  /** What the agent said about its start-up memory: given back (RSS before and after), or why not. */
  memoryReclaim:
    | { rssBeforeMb: number; rssAfterMb: number; tookMs: number }
    | { kept: string }
    | 'not yet'
    | 'off';
  /** With BENCH_AGENT_MEMORY_LIMIT_MB: the limit, the cgroup's peak charge and its hits. */
  memoryLimit?: { limitMb: number; maxUsageMb: number; limitHits: number };
}

// Preloaded into the agent process: heap used after a full GC, as a JSON line on stderr.
const HEAP_PROBE_CODE = `setInterval(() => { globalThis.gc(); process.stderr.write(JSON.stringify({ benchHeapMb: process.memoryUsage().heapUsed / 1048576 }) + '\\n'); }, 10000).unref();`;
const HEAP_PROBE = `data:text/javascript,${HEAP_PROBE_CODE}`;

const PROBES = Number(process.env.BENCH_AGENT_PROBES ?? 3_600);
const SAMPLE_MS = 500;
// Flip the target's status every 300 probes: about a dozen health transitions.
const FLIP_EVERY = 300;

export async function measureAgentMemory(): Promise<AgentMemory> {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
  const { startAgentTestbed } = await import('../test/fixtures/agent-testbed.ts');
  const bed = await startAgentTestbed({ maxConnectionAgeMs: 1_300 });
  const target = await startHttpTarget(200);
  const bundle = process.env.BENCH_AGENT_BUNDLE === '1';
  const executableSetting = process.env.BENCH_AGENT_EXECUTABLE ?? '';
  const workDir =
    bundle || executableSetting !== '' ? mkdtempSync(join(tmpdir(), 'agent-bench-')) : undefined;
  if (bundle && workDir) {
    const script = fileURLToPath(new URL('../packaging/build-agent.sh', import.meta.url));
    execFileSync('sh', [script], { env: { ...process.env, OUT_DIR: workDir }, stdio: 'ignore' });
  }
  let executable: string | undefined;
  if (executableSetting === '1' && workDir) {
    const arch = hostArch();
    if (arch === undefined) throw new Error(`no agent executable for ${process.arch}`);
    const root = fileURLToPath(new URL('..', import.meta.url));
    const built = await buildAgentExecutables({ root, outDir: workDir, arches: [arch] });
    executable = built[arch];
  } else if (executableSetting !== '') {
    executable = executableSetting;
  }
  const program =
    workDir && bundle
      ? join(workDir, 'registrar-agent.mjs')
      : fileURLToPath(new URL('../bin/registrar-agent.js', import.meta.url));
  const nodeFlags = bundle && !executable ? agentNodeFlags() : [];
  const limitMb = Number(process.env.BENCH_AGENT_MEMORY_LIMIT_MB ?? 0);
  const cage =
    limitMb > 0 || memoryCageAvailable()
      ? memoryCage(limitMb || undefined, executable ?? process.execPath)
      : undefined;
  const reclaimAfter = process.env.BENCH_AGENT_RECLAIM_AFTER ?? '2s';
  const agentArgs = [
    ...[
      '--url',
      bed.runtime.url,
      '--group',
      'bench',
      '--namespace',
      'shop',
      '--ip',
      '10.9.0.1',
      '--no-imds',
    ],
    ...[
      '--log-format',
      'json',
      '--probe-time-scale',
      '0.01',
      '--max-connection-age',
      '1300ms',
      '--ping-interval',
      '500ms',
      '--memory-reclaim-after',
      reclaimAfter,
    ],
  ];
  // An executable has its script and flags inside: only the heap probe goes in, through
  // NODE_OPTIONS, as a CommonJS file (an executable's Node.js runs --require, not --import).
  let heapProbeFile: string | undefined;
  if (executable && workDir) {
    heapProbeFile = join(workDir, 'heap-probe.cjs');
    writeFileSync(heapProbeFile, HEAP_PROBE_CODE);
    execFileSync('chmod', ['755', workDir]);
  }
  const nodeArgs = executable
    ? agentArgs
    : [...nodeFlags, '--expose-gc', '--import', HEAP_PROBE, program, ...agentArgs];
  const direct = executable ?? process.execPath;
  const child = spawn(cage ? cage.command : direct, cage ? cage.args(nodeArgs) : nodeArgs, {
    env: {
      ...process.env,
      REGISTRAR_AGENT_TOKEN: bed.token,
      ...(heapProbeFile ? { NODE_OPTIONS: `--expose-gc --require ${heapProbeFile}` } : {}),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let rotations = 0;
  let memoryReclaim: AgentMemory['memoryReclaim'] = reclaimAfter === '0' ? 'off' : 'not yet';
  let transitions = 0;
  const heap: number[] = [];
  let pendingLine = '';
  child.stderr.on('data', (chunk: Buffer) => {
    const lines = (pendingLine + chunk.toString('utf8')).split('\n');
    pendingLine = lines.pop() ?? '';
    for (const line of lines) {
      if (line.includes('"msg":"rotated to a new connection"')) rotations += 1;
      if (line.includes('"msg":"healthy"') || line.includes('"msg":"unhealthy:')) transitions += 1;
      if (line.includes('start-up memory')) {
        const said = JSON.parse(line) as {
          msg: string;
          rssBeforeMb?: number;
          rssAfterMb?: number;
          tookMs?: number;
        };
        memoryReclaim =
          said.rssBeforeMb !== undefined && said.rssAfterMb !== undefined
            ? {
                rssBeforeMb: said.rssBeforeMb,
                rssAfterMb: said.rssAfterMb,
                tookMs: said.tookMs ?? 0,
              }
            : { kept: said.msg };
      }
      if (line.startsWith('{"benchHeapMb"'))
        heap.push((JSON.parse(line) as { benchHeapMb: number }).benchHeapMb);
    }
  });
  await bed.applyGroup('bench', {
    httpGet: { port: target.port, path: '/ready' },
    periodSeconds: 1,
    timeoutSeconds: 50,
    failureThreshold: 1,
  });

  const samples: number[] = [];
  const started = Date.now();
  let cpuS = 0;
  let split = { anon: 0, file: 0 };
  let faultsAtWarmup = 0;
  let warmup = { cpuS: 0, probes: 0 };
  let faults = 0;
  let memoryLimit: AgentMemory['memoryLimit'];
  try {
    let flipAt = FLIP_EVERY;
    while (target.requests < PROBES) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`the agent exited with ${child.exitCode ?? child.signalCode}`);
      }
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
      if (target.requests >= flipAt) {
        target.status = target.status === 200 ? 500 : 200;
        flipAt += FLIP_EVERY;
      }
      const rss = rssMb(child.pid as number);
      if (rss !== undefined) samples.push(rss);
      // The first quarter of an hour bench is about 18 samples: start-up is behind by then.
      if (samples.length === 18) {
        faultsAtWarmup = majorFaults(child.pid as number) ?? 0;
        warmup = { cpuS: cpuSeconds(child.pid as number) ?? 0, probes: target.requests };
      }
    }
    faults = majorFaults(child.pid as number) ?? 0;
    cpuS = cpuSeconds(child.pid as number) ?? 0;
    split = rssSplitMb(child.pid as number);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    await target.close();
    await bed.close();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
    if (cage) {
      if (limitMb > 0) memoryLimit = { limitMb, ...cage.usage() };
      cage.close();
    }
  }
  const quarter = Math.max(1, Math.floor(samples.length / 4));
  const mean = (values: number[]) =>
    values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
  const round = (value: number) => Math.round(value * 10) / 10;
  return {
    program: executable ? 'executable' : bundle ? 'bundle' : 'sources',
    nodeFlags,
    durationS: round((Date.now() - started) / 1000),
    probes: target.requests,
    rotations,
    healthTransitions: transitions,
    samples: samples.length,
    rssAfterWarmupMb: round(samples[quarter] ?? 0),
    rssEndMb: round(samples.at(-1) ?? 0),
    rssMaxMb: round(Math.max(...samples)),
    rssGrowthMb: round(mean(samples.slice(-quarter)) - mean(samples.slice(quarter, 2 * quarter))),
    rssByQuarterMb: [0, 1, 2, 3].map((q) =>
      round(mean(samples.slice(q * quarter, (q + 1) * quarter))),
    ),
    heapAfterGcFirstMb: round(heap[0] ?? 0),
    heapAfterGcWarmupMb: round(heap[Math.floor(heap.length / 4)] ?? 0),
    heapAfterGcEndMb: round(heap.at(-1) ?? 0),
    cpuS: round(cpuS),
    cpuMsPerProbe: Math.round((cpuS * 1000 * 1000) / Math.max(1, target.requests)) / 1000,
    cpuMsPerProbeAfterWarmup:
      Math.round(
        ((cpuS - warmup.cpuS) * 1000 * 1000) / Math.max(1, target.requests - warmup.probes),
      ) / 1000,
    rssAnonEndMb: round(split.anon),
    rssFileEndMb: round(split.file),
    majorFaults: faults,
    majorFaultsAfterWarmup: faults - faultsAtWarmup,
    cgroup: cage ? 'own' : 'shared',
    memoryReclaim,
    ...(memoryLimit ? { memoryLimit } : {}),
  };
}

/** The Node flags the executable starts with, for the bundle, unless BENCH_AGENT_NODE_FLAGS says. */
export function agentNodeFlags(): string[] {
  const override = process.env.BENCH_AGENT_NODE_FLAGS;
  if (override !== undefined) return override.split(/\s+/).filter(Boolean);
  return unitNodeFlags();
}

function rssSplitMb(pid: number): { anon: number; file: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) =>
      Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
    return { anon: kb('RssAnon') / 1024, file: (kb('RssFile') + kb('RssShmem')) / 1024 };
  } catch {
    return { anon: 0, file: 0 };
  }
}

/** majflt (field 12 of /proc/<pid>/stat): pages the process waited for the disk to read. */
function majorFaults(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[9]);
  } catch {
    return undefined;
  }
}

/** utime + stime (fields 14 and 15 of /proc/<pid>/stat, in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

function rssMb(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await measureAgentMemory(), null, 2));
}
