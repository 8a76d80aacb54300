import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type HttpTarget, startHttpTarget, waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * The agent's self-heal against the real local runtime (gateway, handlers, dynalite): when the
 * registrar answers that its connection holds no entry, it opens a new connection, which
 * registers the VM again, and only then closes the old one.
 */
let bed: AgentTestbed;
let target: HttpTarget;

beforeAll(async () => {
  bed = await startAgentTestbed();
  target = await startHttpTarget(200);
});
afterAll(async () => {
  await target?.close();
  await bed?.close();
});

describe('agent self-heal against the local runtime', () => {
  it('registers again through a new connection after its entry was deleted under it', async () => {
    await bed.applyGroup('heal', {
      httpGet: { port: target.port, path: '/ready' },
      periodSeconds: 1,
      successThreshold: 1,
      failureThreshold: 1,
    });
    const agent = await bed.agent({ group: 'heal', ips: ['10.0.5.1'] });
    await waitFor(async () => (await bed.entry('heal-10.0.5.1'))?.healthy === 'True', 'healthy');

    // The entry goes away while the connection stays open (deleted by hand, or swept by
    // mistake): the connection now holds nothing, and only its next message can tell.
    expect(await bed.registry.deleteEntry({ namespace: NAMESPACE, name: 'heal-10.0.5.1' })).toBe(
      true,
    );
    target.status = 503;

    await waitFor(
      async () => (await bed.entry('heal-10.0.5.1'))?.healthy === 'False',
      'the unhealthy report to land on a new connection',
      15_000,
    );
    const entry = await bed.entry('heal-10.0.5.1');
    expect(entry?.connected).toBe(true);
    const replacing = agent.events.filter((e) => e.type === 'replacing');
    expect(replacing).toHaveLength(1);
    expect((replacing[0] as { reason: string }).reason).toMatch(/holds no entry/);
    const connected = agent.events.filter((e) => e.type === 'connected');
    expect(connected).toHaveLength(2);
    // Make before break: the old connection closed only after the new one was open.
    const closedFirst = agent.events.find(
      (e) => e.type === 'closed' && e.linkId === (connected[0] as { linkId: number }).linkId,
    );
    expect(closedFirst?.at).toBeGreaterThanOrEqual((connected[1] as { at: number }).at);
    await agent.stop();
  });
});
