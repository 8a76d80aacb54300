import { readFile, writeFile } from 'node:fs/promises';

/**
 * Gives back the memory the agent's start-up used and will not touch again (docs/agent.md,
 * "Memory"). Most of a bundled agent's resident memory is node's own binary: pages of code the
 * dynamic linker and Node's bootstrap read once. The kernel keeps them mapped until something
 * needs the memory. Once the agent is registered, it asks the kernel to take back what its own
 * cgroup holds: cgroup v2's `memory.reclaim`, or cgroup v1's `memory.force_empty`. The pages
 * the agent still uses come back at their next touch; the start-up ones stay out. Measured with
 * bench/agent-memory.ts: 59 -> 35 MB resident, flat over the hour, the same CPU per probe.
 *
 * Unlike a memory ceiling (`MemoryHigh=`), this is one request at one moment: nothing is
 * throttled afterwards, so an exec probe that needs memory gets it.
 *
 * It only ever touches a cgroup the agent has to itself (systemd gives each service one): every
 * process in it must be the agent or one of its children (an exec probe). Never the root
 * cgroup, never a shell's session, never a cgroup shared with another service. With swap, the
 * kernel would also push the agent's heap to disk; cgroup v2 is asked for file pages only
 * (`swappiness=0`), and where it cannot be asked, nothing is done.
 */

export type ReclaimOutcome =
  | {
      done: true;
      cgroup: string;
      rssBeforeMb: number;
      rssAfterMb: number;
      /** How long the kernel took (the write). */
      tookMs: number;
    }
  | { done: false; reason: string };

/** Where the kernel's files are, and how they are written; tests point them at a directory. */
export interface ReclaimHost {
  /** `/proc`. */
  proc: string;
  /** `/sys/fs/cgroup`. */
  cgroupRoot: string;
  pid: number;
  write?: (file: string, text: string) => Promise<void>;
}

const SYSTEM_HOST: ReclaimHost = { proc: '/proc', cgroupRoot: '/sys/fs/cgroup', pid: process.pid };

interface Cgroup {
  /** As /proc/<pid>/cgroup names it: `/system.slice/registrar-agent.service`. */
  path: string;
  dir: string;
  version: 1 | 2;
}

export async function reclaimStartupMemory(
  host: ReclaimHost = SYSTEM_HOST,
): Promise<ReclaimOutcome> {
  const cgroup = await ownCgroup(host);
  if (typeof cgroup === 'string') return { done: false, reason: cgroup };
  if (cgroup.path === '/') {
    return {
      done: false,
      reason: 'the agent runs in the root cgroup, which holds the whole machine',
    };
  }
  const stranger = await foreignProcess(host, cgroup.dir);
  if (stranger) {
    return {
      done: false,
      reason: `cgroup ${cgroup.path} also holds process ${stranger}, which is not the agent's: run the agent as its own service`,
    };
  }
  const swap = await hasSwap(host);
  const rssBeforeMb = await rssMb(host);
  const write = host.write ?? ((file: string, text: string) => writeFile(file, text));
  const file = `${cgroup.dir}/${cgroup.version === 2 ? 'memory.reclaim' : 'memory.force_empty'}`;
  // force_empty takes anonymous memory to swap too, and v1 cannot be told otherwise.
  if (cgroup.version === 1 && swap) {
    return { done: false, reason: 'cgroup v1 with swap: the heap would go to swap' };
  }
  const started = performance.now();
  try {
    if (cgroup.version === 1) {
      await write(file, '0');
    } else {
      const bytes = (await readFile(`${cgroup.dir}/memory.current`, 'utf8')).trim();
      await write(file, swap ? `${bytes} swappiness=0` : bytes);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // EAGAIN (cgroup v2): the kernel took back less than asked, as expected (the heap stays).
    if (code !== 'EAGAIN') return refused(file, code ?? (error as Error).message, swap);
  }
  const tookMs = Math.round(performance.now() - started);
  return {
    done: true,
    cgroup: cgroup.path,
    rssBeforeMb,
    rssAfterMb: await rssMb(host),
    tookMs,
  };
}

/** Why a write was refused, and what to do about it. */
function refused(file: string, code: string, swap: boolean): ReclaimOutcome {
  if (code === 'EINVAL' && swap) {
    return {
      done: false,
      reason: `${file} does not take swappiness=0 (an older kernel) and this machine has swap: the heap would go to swap`,
    };
  }
  const hint =
    code === 'EACCES' || code === 'EROFS' || code === 'EPERM'
      ? ' (the systemd unit hands the agent this file with ExecStartPre; see docs/agent.md)'
      : '';
  return { done: false, reason: `cannot write ${file}: ${code}${hint}` };
}

/**
 * The agent's memory cgroup: cgroup v1's memory hierarchy if mounted, else the v2 one; or why
 * there is none.
 */
async function ownCgroup(host: ReclaimHost): Promise<Cgroup | string> {
  const lines = (await readFile(`${host.proc}/${host.pid}/cgroup`, 'utf8')).split('\n');
  for (const line of lines) {
    const [, controllers, path] = line.split(':');
    if (path !== undefined && controllers?.split(',').includes('memory')) {
      return { path, dir: `${host.cgroupRoot}/memory${path === '/' ? '' : path}`, version: 1 };
    }
  }
  const unified = lines.find((line) => line.startsWith('0::'))?.slice(3);
  if (unified === undefined) return 'the agent is in no memory cgroup';
  const dir = `${host.cgroupRoot}${unified === '/' ? '' : unified}`;
  try {
    await readFile(`${dir}/memory.current`, 'utf8');
  } catch {
    return `the memory controller is not enabled for cgroup ${unified} (MemoryAccounting=yes in the unit enables it)`;
  }
  return { path: unified, dir, version: 2 };
}

/** A process in the cgroup that is neither the agent nor descended from it, if any. */
async function foreignProcess(host: ReclaimHost, dir: string): Promise<number | undefined> {
  const pids = (await readFile(`${dir}/cgroup.procs`, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map(Number);
  for (const pid of pids) {
    if (!(await descendsFrom(host, pid))) return pid;
  }
  return undefined;
}

async function descendsFrom(host: ReclaimHost, pid: number): Promise<boolean> {
  let current = pid;
  // A probe's shell and what it starts are a few levels deep; 32 is far beyond that.
  for (let depth = 0; depth < 32 && current > 1; depth += 1) {
    if (current === host.pid) return true;
    try {
      const stat = await readFile(`${host.proc}/${current}/stat`, 'utf8');
      current = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return true; // it exited while we looked: a short-lived probe, not a neighbour
    }
  }
  return false;
}

async function hasSwap(host: ReclaimHost): Promise<boolean> {
  const meminfo = await readFile(`${host.proc}/meminfo`, 'utf8');
  return Number(/^SwapTotal:\s+(\d+)/m.exec(meminfo)?.[1] ?? 0) > 0;
}

async function rssMb(host: ReclaimHost): Promise<number> {
  const status = await readFile(`${host.proc}/${host.pid}/status`, 'utf8');
  return Math.round(Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 102.4) / 10;
}
