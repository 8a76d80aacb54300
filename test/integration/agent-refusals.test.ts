import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitFor } from '../fixtures/agent-targets.ts';
import type { TestAgent } from '../fixtures/agent-testbed.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/** Refusals from the real local runtime: the agent says why and waits instead of hammering. */
let bed: AgentTestbed;

beforeAll(async () => {
  bed = await startAgentTestbed();
  await bed.applyGroup('web');
});
afterAll(() => bed?.close());

// Refusal backoff 500 ms: the first wait is in [250, 500] ms, the second in [500, 1000] ms.
const timingOverrides = { refusalBackoffMs: 500, refusalBackoffCapMs: 10_000 };

async function twoRefusals(agent: TestAgent) {
  await waitFor(
    () => agent.events.filter((e) => e.type === 'retry-scheduled').length >= 2,
    'two refusals',
    10_000,
  );
  const retries = agent.events.filter((e) => e.type === 'retry-scheduled') as {
    delayMs: number;
    refused: boolean;
    at: number;
  }[];
  const attempts = agent.events.filter((e) => e.type === 'connecting').map((e) => e.at);
  await agent.stop();
  return { retries, attempts };
}

describe('agent refused by the registrar', () => {
  it('logs the reason for a wrong token and backs off for longer each time', async () => {
    const agent = await bed.agent({
      auth: {
        mode: 'token',
        token: 'wrt.AAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      },
      timingOverrides,
    });
    const { retries, attempts } = await twoRefusals(agent);
    const refusal = agent.logs
      .map((line) => JSON.parse(line) as { level: string; msg: string; status?: number })
      .find((line) => line.status === 401);
    expect(refusal?.level).toBe('error');
    // API Gateway forwards no reason for a 401; the agent says what to check.
    expect(refusal?.msg).toMatch(
      /^refused \(401\): Unauthorized; the join token is wrong, expired or revoked.*; retrying in (\d+ ms|\d+\.\d s)$/,
    );
    expect(retries.every((r) => r.refused)).toBe(true);
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(250);
    expect(retries[1]?.delayMs).toBeGreaterThanOrEqual(500);
    expect((attempts[1] as number) - (attempts[0] as number)).toBeGreaterThanOrEqual(250);
    // The token itself never appears in a log line.
    expect(agent.logs.join('\n')).not.toContain('AAAAAAAAAAAAAAAA');
  });

  it('logs the reason for an unknown group and backs off', async () => {
    // A missing group has its own schedule (agent/backoff.ts, missingGroupDelay): equal jitter
    // over a ceiling that doubles from 4 x the base after the first refusal, so with a 200 ms
    // base the first wait is in [400, 800] ms and the second in [800, 1600] ms.
    const agent = await bed.agent({
      group: 'nope',
      timingOverrides: { ...timingOverrides, backoffBaseMs: 200 },
    });
    const { retries } = await twoRefusals(agent);
    const refusal = agent.logs
      .map((line) => JSON.parse(line) as { msg: string; status?: number })
      .find((line) => line.status === 404);
    expect(refusal?.msg).toContain('cannot find WorkloadGroup shop/nope');
    expect(retries.every((r) => r.refused)).toBe(true);
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(400);
    expect(retries[0]?.delayMs).toBeLessThanOrEqual(800);
    expect(retries[1]?.delayMs).toBeGreaterThanOrEqual(800);
    expect(retries[1]?.delayMs).toBeLessThanOrEqual(1600);
  });

  it('connects normally once the refusal is fixed (the group is created)', async () => {
    const agent = await bed.agent({ group: 'later', ips: ['10.0.3.1'], timingOverrides });
    await waitFor(() => agent.events.some((e) => e.type === 'retry-scheduled'), 'a refusal');
    await bed.applyGroup('later');
    await waitFor(
      () => agent.running.supervisor.entryName === 'shop/later-10.0.3.1',
      'registration after the fix',
      10_000,
    );
    await agent.stop();
  });
});
