import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { failureDelay } from '../../agent/backoff.ts';
import { type Clock, systemClock } from '../../agent/clock.ts';
import type { AgentTiming } from '../../agent/config.ts';
import type { AgentEvent } from '../../agent/supervisor.ts';
import { type LocalRuntimeOptions, startLocalRuntime } from '../../infra/local/runtime.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, FAST_TIMING, testbedFor } from '../fixtures/agent-testbed.ts';
import { restartablePort } from '../fixtures/ports.ts';

/**
 * The registrar goes away long enough for the agent's backoff to grow, comes back, and is
 * restarted again a few seconds later (well before the connection counts as stable). The
 * real local runtime is stopped and started on the same port with the same data; the real
 * agent runs with a pinned jitter (every draw 0.99, the top of each window), so each wait
 * is the formula's. The second restart must find an agent that starts its backoff over: the
 * registrar answered in between.
 */
let dataDir: string | undefined;
const beds: AgentTestbed[] = [];

afterAll(async () => {
  for (const bed of beds) await bed.close().catch(() => {});
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** A cap far above the outage, so a backoff that was not reset shows in the waits. */
const TIMING: AgentTiming = { ...FAST_TIMING, backoffCapMs: 30_000 };
const RANDOM = 0.99;

describe('agent after a registrar restart', () => {
  it('starts its backoff over once the registrar answered again, so a second restart costs one short wait', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'agent-restart-backoff-'));
    const options: LocalRuntimeOptions = {
      dataDir,
      sweepIntervalMs: 3_600_000,
      gracePeriodMs: 3_600_000,
      logLevel: 'SILENT',
      functionEnv: { REGISTRAR_GROUP_CACHE_TTL: '0s' },
    };
    const port = await restartablePort();
    const first = await testbedFor(await startLocalRuntime({ ...options, port }));
    beds.push(first);
    await first.applyGroup('web');
    const clock: Clock = { ...systemClock, random: () => RANDOM };
    const agent = await first.agent({ clock, timingOverrides: TIMING });
    await waitFor(async () => (await first.entry('web-10.0.0.7'))?.connected, 'registered');

    // Outage one: six failed attempts, the window grows to 3.2 s.
    await first.runtime.close();
    const retries = () => agent.events.filter((e) => e.type === 'retry-scheduled');
    await waitFor(() => retries().length >= 7, 'seven waits during the first outage', 20_000);

    const backAt = Date.now();
    const second = await testbedFor(await startLocalRuntime({ ...options, port }), first.token);
    beds.push(second);
    await waitFor(
      () => agent.events.find((e) => e.type === 'connected' && e.at >= backAt),
      'the agent back after the first outage',
      30_000,
    );

    // Outage two, seconds later: the connection is young (stableAfter is a minute).
    const secondClosedAt = Date.now();
    await second.runtime.close();
    await waitFor(
      () => agent.events.find((e) => e.type === 'retry-scheduled' && e.at >= secondClosedAt),
      'the wait after the second restart',
    );
    const third = await testbedFor(await startLocalRuntime({ ...options, port }), first.token);
    beds.push(third);
    const upAt = Date.now();
    const reconnect = await waitFor(
      () => agent.events.find((e) => e.type === 'connected' && e.at >= secondClosedAt),
      'the agent back after the second restart',
      30_000,
    );
    await waitFor(async () => (await third.entry('web-10.0.0.7'))?.connected, 'connected again');

    // Each wait after the second restart is the formula's from its first step: 99 ms, 198 ms,
    // ... Before, the count of the first outage carried over (the young connection never
    // reset it): the first wait was step eight's, 0.99 x 12.8 s.
    const after = retries().filter((e) => e.at >= secondClosedAt) as unknown as (AgentEvent & {
      delayMs: number;
    })[];
    expect(after.length).toBeGreaterThan(0);
    for (const [i, retry] of after.entries()) {
      expect(retry.delayMs).toBe(failureDelay(i + 1, TIMING, RANDOM));
    }
    // So the agent is back within the last wait it had started when the registrar came up.
    const longest = Math.max(...after.map((retry) => retry.delayMs));
    expect(reconnect.at - upAt).toBeLessThanOrEqual(longest + 2_000);
    await agent.stop();
  }, 120_000);
});
