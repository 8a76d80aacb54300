import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReclaimOutcome } from '../../agent/memory-reclaim.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * When the agent gives its start-up memory back (agent/memory-reclaim.ts): once, the
 * configured time after its first registration, through a real runtime and real connections
 * that rotate. What the kernel does is tested in agent-footprint.test.ts; here the reclaim is
 * a recorder, so these tests never touch the test runner's own cgroup.
 */

// Rotations ~1.5 s apart: the second and third registrations come well after a 300 ms delay.
const MAX_AGE_MS = 2_000;
let bed: AgentTestbed;

beforeAll(async () => {
  bed = await startAgentTestbed({ maxConnectionAgeMs: MAX_AGE_MS });
  await bed.applyGroup('web');
});
afterAll(() => bed.close());

function recorder(outcome: ReclaimOutcome | Error) {
  const calls: number[] = [];
  return {
    calls,
    reclaimMemory: async () => {
      calls.push(Date.now());
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
  };
}

const registrations = (agent: { events: { type: string }[] }) =>
  agent.events.filter((event) => event.type === 'registered').length;

describe('giving the start-up memory back', () => {
  it('happens once, after the first registration, and not again on rotations', async () => {
    const reclaim = recorder({
      done: true,
      cgroup: '/system.slice/registrar-agent.service',
      rssBeforeMb: 58.6,
      rssAfterMb: 34.9,
      tookMs: 12,
    });
    const agent = await bed.agent({
      ips: ['10.0.40.1'],
      reclaimMemory: reclaim.reclaimMemory,
      timingOverrides: { memoryReclaimAfterMs: 300, maxConnectionAgeMs: MAX_AGE_MS },
    });
    const firstRegistration = await waitFor(
      () => agent.events.find((event) => event.type === 'registered')?.at,
      'the first registration',
    );
    await waitFor(() => reclaim.calls.length === 1, 'the reclaim');
    expect((reclaim.calls[0] as number) - firstRegistration).toBeGreaterThanOrEqual(300);
    // Two rotations later (each registration would have armed its own 300 ms), still one.
    await waitFor(() => registrations(agent) >= 3, 'two rotations', 20_000);
    expect(reclaim.calls).toHaveLength(1);
    const line = JSON.parse(
      agent.logs.find((l) => l.includes('start-up memory')) as string,
    ) as Record<string, unknown>;
    expect(line).toMatchObject({
      level: 'info',
      msg: 'gave the start-up memory back to the kernel',
      rssBeforeMb: 58.6,
      rssAfterMb: 34.9,
      tookMs: 12,
      cgroup: '/system.slice/registrar-agent.service',
    });
    await agent.stop();
  }, 30_000);

  it('says why it kept the memory, and a failure is a warning, not a crash', async () => {
    const kept = recorder({ done: false, reason: 'cgroup / holds the whole machine' });
    const broken = recorder(new Error('EIO reading /proc/self/cgroup'));
    const a = await bed.agent({
      ips: ['10.0.40.2'],
      reclaimMemory: kept.reclaimMemory,
      timingOverrides: { memoryReclaimAfterMs: 100 },
    });
    const b = await bed.agent({
      ips: ['10.0.40.3'],
      reclaimMemory: broken.reclaimMemory,
      timingOverrides: { memoryReclaimAfterMs: 100 },
    });
    await waitFor(() => a.logs.some((l) => l.includes('kept the start-up memory')), 'a kept');
    await waitFor(() => b.logs.some((l) => l.includes('kept the start-up memory')), 'b kept');
    expect(a.logs.find((l) => l.includes('kept'))).toContain(
      '"level":"info","msg":"kept the start-up memory: cgroup / holds the whole machine"',
    );
    expect(b.logs.find((l) => l.includes('kept'))).toContain(
      '"level":"warn","msg":"kept the start-up memory: EIO reading /proc/self/cgroup"',
    );
    // The agent that failed to reclaim is still registered and healthy.
    expect(b.running.supervisor.link).toBeDefined();
    await Promise.all([a.stop(), b.stop()]);
  });

  it('never happens when turned off (0) or when the agent stops first', async () => {
    const off = recorder({ done: false, reason: 'unused' });
    const stopped = recorder({ done: false, reason: 'unused' });
    const witness = recorder({ done: false, reason: 'witness' });
    const a = await bed.agent({
      ips: ['10.0.40.4'],
      reclaimMemory: off.reclaimMemory,
      timingOverrides: { memoryReclaimAfterMs: 0 },
    });
    let stopping: Promise<void> | undefined;
    const b = await bed.agent({
      ips: ['10.0.40.5'],
      reclaimMemory: stopped.reclaimMemory,
      timingOverrides: { memoryReclaimAfterMs: 300 },
      // Stopped the moment it registers, before the 300 ms are up.
      onEvent: (event) => {
        if (event.type === 'registered') stopping ??= b.stop();
      },
    });
    // (a promise would be awaited by waitFor, so the check is on whether there is one)
    await waitFor(() => stopping !== undefined, 'the second agent registered and stopping');
    await stopping;
    await waitFor(() => registrations(a) >= 1, 'the first agent registered');
    // A third agent with the same delay, started after both: once its reclaim ran, theirs
    // would have run too.
    const c = await bed.agent({
      ips: ['10.0.40.6'],
      reclaimMemory: witness.reclaimMemory,
      timingOverrides: { memoryReclaimAfterMs: 300 },
    });
    await waitFor(() => witness.calls.length === 1, "the witness's reclaim");
    expect(off.calls).toEqual([]);
    expect(stopped.calls).toEqual([]);
    await Promise.all([a.stop(), c.stop()]);
  });
});
