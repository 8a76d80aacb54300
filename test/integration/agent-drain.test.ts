import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startAgent } from '../../agent/agent.ts';
import { systemClock } from '../../agent/clock.ts';
import { DEFAULT_TIMING } from '../../agent/config.ts';
import { memoryLogger } from '../../agent/logger.ts';
import { HEALTHY_CONDITION } from '../../lib/domain/model.ts';
import { type StandInGateway, startStandInGateway } from '../fixtures/agent-stand-in-gateway.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * Graceful drain over real WebSockets and real time: the agent keeps its connection open for
 * the drain delay after the registrar acknowledged the drain, then closes with 1000.
 */
const DELAY_MS = 1_500;

describe('agent drain against a registrar that knows drain (stand-in, real WebSocket)', () => {
  let gateway: StandInGateway;
  beforeAll(async () => {
    gateway = await startStandInGateway({ groups: { 'shop/web': null } });
  });
  afterAll(() => gateway.close());

  it('closes with 1000 no sooner than the drain delay after the registrar acknowledged the drain', async () => {
    const agent = await startAgent(
      {
        url: gateway.url,
        group: 'web',
        namespace: 'shop',
        labels: {},
        auth: { mode: 'token', token: 'test-token' },
        ips: ['10.0.7.1'],
        imds: { enabled: false, url: 'http://127.0.0.1:1', timeoutMs: 100 },
        logFormat: 'json',
        debug: false,
        timing: { ...DEFAULT_TIMING, drainDelayMs: DELAY_MS },
      },
      { logger: memoryLogger() },
    );
    await waitFor(() => agent.supervisor.entryName !== undefined, 'registration');

    await agent.drainAndStop();

    expect(gateway.drains).toHaveLength(1);
    expect(gateway.closes).toHaveLength(1);
    const [drain, close] = [gateway.drains[0], gateway.closes[0]] as [
      { at: number },
      { at: number; code: number },
    ];
    expect(close.code).toBe(1000);
    // Measured on the server: from the moment the ack left to the moment the close arrived.
    expect(close.at - drain.at).toBeGreaterThanOrEqual(DELAY_MS);
  });
});

describe('agent drain against the local runtime', () => {
  let bed: AgentTestbed;
  beforeAll(async () => {
    bed = await startAgentTestbed();
    await bed.applyGroup('web');
  });
  afterAll(() => bed?.close());

  it('shows the entry Healthy False / Draining while still connected for the drain delay, then closes with 1000', async () => {
    const agent = await bed.agent({
      ips: ['10.0.7.2'],
      timingOverrides: { drainDelayMs: DELAY_MS },
      // Event times in fractions of a millisecond, on the clock the agent's timers keep.
      clock: { ...systemClock, now: () => performance.timeOrigin + performance.now() },
    });
    await waitFor(() => agent.running.supervisor.entryName === 'shop/web-10.0.7.2', 'registration');

    const draining = agent.running.drainAndStop();
    const acked = await waitFor(
      () => agent.events.find((e) => e.type === 'drain-acked'),
      'the registrar to acknowledge the drain',
    );
    // The mesh sees the VM leave before its connection does: Healthy False / Draining while
    // the connection still holds the entry, from the ack until just before the close.
    const seen: {
      at: number;
      connected: boolean;
      healthy?: string;
      reason?: string;
      since?: string;
    }[] = [];
    const now = () => performance.timeOrigin + performance.now();
    while (!agent.events.some((e) => e.type === 'closed')) {
      const at = now();
      const entry = await bed.entry('web-10.0.7.2');
      const healthy = entry?.we.status?.conditions?.find((c) => c.type === HEALTHY_CONDITION);
      if (!agent.events.some((e) => e.type === 'closed')) {
        seen.push({
          at,
          connected: entry?.connected ?? false,
          ...(healthy?.status ? { healthy: healthy.status } : {}),
          ...(healthy?.reason ? { reason: healthy.reason } : {}),
          ...(healthy?.lastTransitionTime ? { since: healthy.lastTransitionTime } : {}),
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await draining;

    expect(seen.length).toBeGreaterThan(0);
    for (const sample of seen) {
      expect(sample).toMatchObject({ connected: true, healthy: 'False', reason: 'Draining' });
    }
    const closed = agent.events.find((e) => e.type === 'closed');
    expect(closed).toMatchObject({ code: 1000 });
    expect((closed?.at ?? 0) - acked.at).toBeGreaterThanOrEqual(DELAY_MS);
    // The registrar turned the entry Draining before it acknowledged (server time, whole
    // milliseconds), and every sample until the close still showed it: Draining while connected
    // for at least the delay.
    const since = Date.parse(seen[0]?.since ?? '');
    expect(new Set(seen.map((sample) => sample.since)).size).toBe(1);
    expect(since).toBeLessThanOrEqual(Math.ceil(acked.at));
    expect((closed?.at ?? 0) - since).toBeGreaterThanOrEqual(DELAY_MS);
    await waitFor(
      async () => (await bed.entry('web-10.0.7.2'))?.connected === false,
      'the entry to be disconnected',
    );
  });
});
