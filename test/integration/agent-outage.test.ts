import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { failureDelay } from '../../agent/backoff.ts';
import { type Clock, systemClock } from '../../agent/clock.ts';
import type { AgentEvent } from '../../agent/supervisor.ts';
import { startLocalRuntime } from '../../infra/local/runtime.ts';
import { type HttpTarget, startHttpTarget, waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, FAST_TIMING, testbedFor } from '../fixtures/agent-testbed.ts';
import { restartablePort } from '../fixtures/ports.ts';

/**
 * The registrar goes away (the local runtime is stopped) and comes back on the same port with
 * the same data. The agent's jitter comes from an injected random source whose every draw is
 * recorded, so each delay can be checked against the backoff formula; the attempt times show
 * it waited that long.
 */
let dataDir: string;
let target: HttpTarget;
const beds: AgentTestbed[] = [];

afterAll(async () => {
  for (const bed of beds) await bed.close().catch(() => {});
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('agent during a registrar outage', () => {
  it('reconnects with growing, jittered delays and re-sends its health state first', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'agent-outage-'));
    target = await startHttpTarget(200);
    const options = {
      dataDir,
      sweepIntervalMs: 3_600_000,
      gracePeriodMs: 3_600_000,
      logLevel: 'SILENT' as const,
      functionEnv: { REGISTRAR_GROUP_CACHE_TTL: '0s' },
    };
    // Restarted on the same port below: one the kernel never hands out meanwhile.
    const port = await restartablePort();
    const first = await testbedFor(await startLocalRuntime({ ...options, port }));
    beds.push(first);
    await first.applyGroup('web', { httpGet: { port: target.port }, periodSeconds: 1 });

    // A varied sequence, so that "jittered" is visible: the delays do not follow the ceiling.
    const sequence = [0.9, 0.55, 0.8, 0.65, 0.95, 0.7, 0.85, 0.6];
    let draws = 0;
    let lastDraw = 0;
    const clock: Clock = {
      ...systemClock,
      random: () => (lastDraw = sequence[draws++ % sequence.length] as number),
    };
    const retries: { delayMs: number; random: number; at: number }[] = [];
    const onEvent = (event: AgentEvent & { at: number }) => {
      if (event.type === 'retry-scheduled')
        retries.push({ delayMs: event.delayMs, random: lastDraw, at: event.at });
    };
    const agent = await first.agent({ clock, onEvent });
    await waitFor(
      async () => (await first.entry('web-10.0.0.7'))?.healthy === 'True',
      'entry healthy',
    );

    await first.runtime.close();
    await waitFor(() => retries.length >= 5, 'five reconnect attempts', 15_000);

    const restartedAt = Date.now();
    const runtime = await startLocalRuntime({ ...options, port });
    const second = await testbedFor(runtime, first.token);
    beds.push(second);
    const reconnect = await waitFor(
      () => agent.events.find((e) => e.type === 'connected' && e.at >= restartedAt),
      'the reconnect',
      15_000,
    );
    await waitFor(
      async () => (await second.entry('web-10.0.0.7'))?.connected,
      'entry connected again',
    );

    // Each delay is the full-jitter formula for the n-th failure: [0, min(1 s, 100 ms x 2^(n-1))).
    for (const [i, retry] of retries.entries()) {
      expect(retry.delayMs).toBe(failureDelay(i + 1, FAST_TIMING, retry.random));
    }
    // The window doubles per failure, so later delays are longer even with the jitter.
    expect(retries[4]?.delayMs).toBeGreaterThan(3 * (retries[0]?.delayMs ?? 0));
    // The agent really waited: consecutive attempts are at least the scheduled delay apart.
    const attempts = agent.events
      .filter((e) => e.type === 'connecting' && e.at > (retries[0]?.at ?? 0))
      .map((e) => e.at);
    for (const [i, at] of attempts.slice(0, retries.length - 1).entries()) {
      expect(at - (retries[i]?.at ?? 0)).toBeGreaterThanOrEqual((retries[i]?.delayMs ?? 0) - 2);
    }

    // The first message on the new connection is the last health state, before describe.
    const afterReconnect = agent.events.filter(
      (e) => e.at >= reconnect.at && (e.type === 'health-sent' || e.type === 'registered'),
    );
    expect(afterReconnect[0]).toMatchObject({ type: 'health-sent', healthy: true });
    await waitFor(async () => {
      const condition = (await second.entry('web-10.0.0.7'))?.we.status?.conditions?.[0];
      return (
        condition?.status === 'True' && Date.parse(condition.lastProbeTime ?? '') >= restartedAt
      );
    }, 'the re-sent health to land');
    await agent.stop();
  });
});
