import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type HttpTarget, startHttpTarget, waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * Make before break against the real local gateway, whose maximum connection age is cut
 * from API Gateway's 2 h to 3 s: the agent must rotate before the gateway cuts it, and the
 * entry must never be seen disconnected or lose its health while it does.
 */
const MAX_AGE_MS = 3_000;
let bed: AgentTestbed;
let target: HttpTarget;

beforeAll(async () => {
  bed = await startAgentTestbed({ maxConnectionAgeMs: MAX_AGE_MS });
  target = await startHttpTarget(200);
});
afterAll(async () => {
  await bed?.close();
  await target?.close();
});

describe('agent connection rotation', () => {
  it('rotates several times and the entry is never seen disconnected', async () => {
    await bed.applyGroup('rot', { httpGet: { port: target.port }, periodSeconds: 1 });
    const agent = await bed.agent({
      group: 'rot',
      ips: ['10.0.1.1'],
      timingOverrides: { maxConnectionAgeMs: MAX_AGE_MS },
    });
    await waitFor(
      async () => (await bed.entry('rot-10.0.1.1'))?.healthy === 'True',
      'entry healthy',
    );

    const samples: { connected: boolean; healthy: string | undefined }[] = [];
    const rotations = () =>
      agent.events.filter((e) => e.type === 'connected' && e.kind === 'rotate').length;
    await waitFor(
      async () => {
        const entry = await bed.entry('rot-10.0.1.1');
        samples.push({ connected: entry?.connected ?? false, healthy: entry?.healthy });
        return rotations() >= 3;
      },
      'three rotations',
      20_000,
    );

    expect(samples.length).toBeGreaterThan(20);
    expect(samples.filter((s) => !s.connected)).toEqual([]);
    expect(samples.filter((s) => s.healthy !== 'True')).toEqual([]);
    // Every connection was replaced by the agent, none cut by the gateway's age limit.
    expect(agent.events.filter((e) => e.type === 'retry-scheduled')).toEqual([]);
    await agent.stop();
  });
});
