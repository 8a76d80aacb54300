import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * The end of a drain (issue 9): after the agent's clean close the entry is a deliberate
 * departure, removed once the grace period is over, by the local runtime's own sweeper (not a
 * sweep the test runs), and never held by fail static.
 */
const GRACE_MS = 1_000;
const SWEEP_MS = 300;

describe('a drained VM leaves after the grace period', () => {
  let bed: AgentTestbed;
  beforeAll(async () => {
    bed = await startAgentTestbed({ gracePeriodMs: GRACE_MS, sweepIntervalMs: SWEEP_MS });
    await bed.applyGroup('web');
  });
  afterAll(() => bed?.close());

  it('is Draining while connected, disconnected cleanly, then swept after grace', async () => {
    const agent = await bed.agent({ ips: ['10.0.7.9'], timingOverrides: { drainDelayMs: 500 } });
    await waitFor(() => agent.running.supervisor.entryName === 'shop/web-10.0.7.9', 'registration');

    await agent.running.drainAndStop();
    const closedAt = agent.events.find((e) => e.type === 'closed')?.at ?? 0;
    expect(agent.events.find((e) => e.type === 'closed')).toMatchObject({ code: 1000 });

    // The close is the agent's; its $disconnect runs on the gateway a moment later.
    const record = await waitFor(async () => {
      const current = await bed.registry.getEntry({ namespace: 'shop', name: 'web-10.0.7.9' });
      if (current === undefined) return 'gone' as const;
      return current.connection?.connectedAt === undefined ? current : undefined;
    }, 'the $disconnect');
    // Gone already, or disconnected by a clean departure and waiting out its grace.
    if (record !== 'gone') expect(record.connection).toMatchObject({ departure: 'clean' });
    await waitFor(
      async () =>
        (await bed.registry.getEntry({ namespace: 'shop', name: 'web-10.0.7.9' })) === undefined,
      'the drained entry to be swept',
      GRACE_MS + 10 * SWEEP_MS + 5_000,
    );
    const sweptAfterMs = Date.now() - closedAt;
    // Not before its grace period was over.
    expect(sweptAfterMs).toBeGreaterThanOrEqual(GRACE_MS);
  });
});
