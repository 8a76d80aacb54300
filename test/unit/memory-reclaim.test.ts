import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ReclaimHost, reclaimStartupMemory } from '../../agent/memory-reclaim.ts';

/**
 * The decisions of agent/memory-reclaim.ts: which cgroup, whether it is the agent's alone,
 * what is written where. The kernel's files (/proc, /sys/fs/cgroup) are a boundary these tests
 * cannot run for real in every shape (a cgroup v2 host, swap, an old kernel), so a directory
 * stands in for them and a recorder for the writes. The real kernel runs in
 * test/integration/agent-footprint.test.ts (cgroup v1, its own cgroup and a shared one).
 */

const AGENT = 4242;
const SERVICE = '/system.slice/registrar-agent.service';

let root: string;
let writes: { file: string; text: string }[];
let failWith: ((text: string) => string | undefined) | undefined;

function host(): ReclaimHost {
  return {
    proc: join(root, 'proc'),
    cgroupRoot: join(root, 'cgroup'),
    pid: AGENT,
    write: async (file, text) => {
      const code = failWith?.(text);
      if (code) throw Object.assign(new Error(code), { code });
      writes.push({ file: file.slice(root.length), text });
    },
  };
}

function put(path: string, text: string): void {
  const file = join(root, path);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, text);
}

/** A process: its cgroup file, its parent, its resident memory. */
function proc(pid: number, ppid: number, cgroupLines: string, rssKb = 60_000): void {
  put(`proc/${pid}/cgroup`, cgroupLines);
  put(`proc/${pid}/stat`, `${pid} (node) S ${ppid} 1 1 0 -1`);
  put(`proc/${pid}/status`, `Name:\tnode\nVmRSS:\t${rssKb} kB\n`);
}

function swap(kb: number): void {
  put('proc/meminfo', `MemTotal: 1000000 kB\nSwapTotal: ${kb} kB\n`);
}

/** A cgroup v2 host: the agent alone in its service's cgroup. */
function v2Service(members: number[] = [AGENT]): void {
  proc(AGENT, 1, `0::${SERVICE}\n`);
  put(`cgroup${SERVICE}/memory.current`, '61865984\n');
  put(`cgroup${SERVICE}/cgroup.procs`, `${members.join('\n')}\n`);
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'memory-reclaim-'));
  writes = [];
  failWith = undefined;
  swap(0);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('giving the start-up memory back', () => {
  it('asks cgroup v2 to take back what its own cgroup holds', async () => {
    v2Service();
    const outcome = await reclaimStartupMemory(host());
    expect(writes).toEqual([{ file: `/cgroup${SERVICE}/memory.reclaim`, text: '61865984' }]);
    expect(outcome).toMatchObject({ done: true, cgroup: SERVICE, rssBeforeMb: 58.6 });
  });

  it('asks for file pages only when the machine has swap, so the heap stays in memory', async () => {
    v2Service();
    swap(2_000_000);
    await reclaimStartupMemory(host());
    expect(writes).toEqual([
      { file: `/cgroup${SERVICE}/memory.reclaim`, text: '61865984 swappiness=0' },
    ]);
  });

  it('does nothing where the kernel cannot be asked for file pages only and there is swap', async () => {
    v2Service();
    swap(2_000_000);
    failWith = (text) => (text.includes('swappiness') ? 'EINVAL' : undefined);
    const outcome = await reclaimStartupMemory(host());
    expect(writes).toEqual([]);
    expect(outcome).toEqual({
      done: false,
      reason: `${join(root, 'cgroup')}${SERVICE}/memory.reclaim does not take swappiness=0 (an older kernel) and this machine has swap: the heap would go to swap`,
    });
  });

  it('counts a partial reclaim (EAGAIN: the heap stayed) as done', async () => {
    v2Service();
    failWith = () => 'EAGAIN';
    expect(await reclaimStartupMemory(host())).toMatchObject({ done: true });
  });

  it('empties a cgroup v1 memory cgroup of what can be taken back (force_empty)', async () => {
    proc(AGENT, 1, `9:name=systemd:${SERVICE}\n4:memory:${SERVICE}\n0::/\n`);
    put(`cgroup/memory${SERVICE}/cgroup.procs`, `${AGENT}\n`);
    const outcome = await reclaimStartupMemory(host());
    expect(writes).toEqual([{ file: `/cgroup/memory${SERVICE}/memory.force_empty`, text: '0' }]);
    expect(outcome).toMatchObject({ done: true, cgroup: SERVICE });
  });

  it('does nothing on cgroup v1 with swap, which cannot spare the heap', async () => {
    proc(AGENT, 1, `4:memory:${SERVICE}\n`);
    put(`cgroup/memory${SERVICE}/cgroup.procs`, `${AGENT}\n`);
    swap(1_000);
    expect(await reclaimStartupMemory(host())).toEqual({
      done: false,
      reason: 'cgroup v1 with swap: the heap would go to swap',
    });
    expect(writes).toEqual([]);
  });

  it('counts its exec probes (children and their children) as its own', async () => {
    v2Service([AGENT, 5000, 5001]);
    proc(5000, AGENT, `0::${SERVICE}\n`);
    proc(5001, 5000, `0::${SERVICE}\n`);
    expect(await reclaimStartupMemory(host())).toMatchObject({ done: true });
  });

  it('counts a process that exited while it looked (a finished probe) as its own', async () => {
    v2Service([AGENT, 5002]);
    expect(await reclaimStartupMemory(host())).toMatchObject({ done: true });
  });

  it("leaves a cgroup shared with another process alone: a neighbour's memory is not the agent's", async () => {
    v2Service([AGENT, 777]);
    proc(777, 1, `0::${SERVICE}\n`);
    expect(await reclaimStartupMemory(host())).toEqual({
      done: false,
      reason: `cgroup ${SERVICE} also holds process 777, which is not the agent's: run the agent as its own service`,
    });
    expect(writes).toEqual([]);
  });

  it('leaves the root cgroup alone: it holds the whole machine', async () => {
    proc(AGENT, 1, '0::/\n');
    put('cgroup/memory.current', '1\n');
    expect(await reclaimStartupMemory(host())).toEqual({
      done: false,
      reason: 'the agent runs in the root cgroup, which holds the whole machine',
    });
    expect(writes).toEqual([]);
  });

  it('does nothing where the memory controller is not enabled for its cgroup', async () => {
    proc(AGENT, 1, `0::${SERVICE}\n`);
    put(`cgroup${SERVICE}/cgroup.procs`, `${AGENT}\n`);
    expect(await reclaimStartupMemory(host())).toEqual({
      done: false,
      reason: `the memory controller is not enabled for cgroup ${SERVICE} (MemoryAccounting=yes in the unit enables it)`,
    });
  });

  it('names the file and the fix when it may not write it', async () => {
    v2Service();
    failWith = () => 'EACCES';
    const outcome = await reclaimStartupMemory(host());
    expect(outcome).toEqual({
      done: false,
      reason: `cannot write ${join(root, 'cgroup')}${SERVICE}/memory.reclaim: EACCES (the systemd unit hands the agent this file with ExecStartPre; see docs/agent.md)`,
    });
  });
});
