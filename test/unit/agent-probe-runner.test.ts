import { describe, expect, it } from 'vitest';
import type { ProbeResult } from '../../agent/probes/probe-result.ts';
import {
  type HealthState,
  ProbeRunner,
  type ProbeSettings,
  probeSettings,
} from '../../agent/probes/probe-runner.ts';
import { ManualClock } from '../fixtures/agent-manual-clock.ts';

const ok: ProbeResult = { ok: true, message: 'ok' };
const fail: ProbeResult = { ok: false, message: 'HTTP probe failed with status code 500' };

function run(results: ProbeResult[], settings: Partial<ProbeSettings>, durationMs: number) {
  const clock = new ManualClock();
  const states: HealthState[] = [];
  const attempts: number[] = [];
  const queue = [...results];
  const runner = new ProbeRunner({
    clock,
    settings: { ...probeSettings({}), ...settings },
    check: async () => {
      attempts.push(clock.now());
      return queue.shift() ?? (results.at(-1) as ProbeResult);
    },
    onTransition: (state) => states.push(state),
  });
  runner.start();
  return clock.advance(durationMs).then(() => ({ states, attempts, runner, clock }));
}

describe('probe settings', () => {
  it('uses the Kubernetes defaults: period 10 s, timeout 1 s, thresholds 1 and 3', () => {
    expect(probeSettings({ tcpSocket: { port: 80 } })).toEqual({
      initialDelayMs: 0,
      periodMs: 10_000,
      timeoutMs: 1_000,
      successThreshold: 1,
      failureThreshold: 3,
    });
  });

  it('replaces zero or negative values with the defaults instead of probing in a loop', () => {
    expect(
      probeSettings({ periodSeconds: 0, timeoutSeconds: -1, failureThreshold: 0 }),
    ).toMatchObject({ periodMs: 10_000, timeoutMs: 1_000, failureThreshold: 3 });
  });

  it('scales seconds for tests', () => {
    expect(probeSettings({ periodSeconds: 2, initialDelaySeconds: 1 }, 0.01)).toMatchObject({
      periodMs: 20,
      initialDelayMs: 10,
    });
  });
});

describe('probe runner', () => {
  it('reports healthy, unhealthy, healthy for 200, 500, 200 with thresholds 1/1', async () => {
    const { states } = await run(
      [ok, fail, ok],
      { successThreshold: 1, failureThreshold: 1, periodMs: 1_000 },
      10_000,
    );
    expect(states.map((s) => s.healthy)).toEqual([true, false, true]);
    expect(states[1]?.message).toBe(fail.message);
  });

  it('needs three failures in a row to turn unhealthy with failureThreshold 3', async () => {
    const { states } = await run(
      [ok, fail, fail, ok, fail, fail, fail, ok],
      { successThreshold: 1, failureThreshold: 3, periodMs: 1_000 },
      20_000,
    );
    expect(states.map((s) => s.healthy)).toEqual([true, false, true]);
  });

  it('needs three successes in a row to turn healthy with successThreshold 3', async () => {
    const results = [ok, ok, fail, ok, ok, ok];
    const settings = { successThreshold: 3, failureThreshold: 3, periodMs: 1_000 };
    // Attempts at 0, 1, ... 5 s: the failure at 2 s resets the count, the sixth attempt reports.
    expect((await run(results, settings, 4_500)).states).toEqual([]);
    expect((await run(results, settings, 5_500)).states.map((s) => s.healthy)).toEqual([true]);
  });

  it('reports nothing until a threshold is reached', async () => {
    const { states } = await run(
      [fail, fail, ok],
      { successThreshold: 2, failureThreshold: 3, periodMs: 1_000 },
      2_500,
    );
    expect(states).toEqual([]);
  });

  it('waits initialDelaySeconds before the first attempt and then probes every period', async () => {
    const { attempts, clock } = await run(
      [ok],
      { initialDelayMs: 5_000, periodMs: 10_000 },
      30_000,
    );
    const start = clock.now() - 30_000;
    expect(attempts.map((at) => at - start)).toEqual([5_000, 15_000, 25_000]);
  });

  it('does not start a new attempt while one is still running', async () => {
    const clock = new ManualClock();
    let running = 0;
    let overlap = false;
    const runner = new ProbeRunner({
      clock,
      settings: { ...probeSettings({}), periodMs: 1_000 },
      check: async () => {
        running += 1;
        overlap ||= running > 1;
        await new Promise<void>((resolve) => clock.setTimer(2_500, resolve));
        running -= 1;
        return ok;
      },
      onTransition: () => {},
    });
    runner.start();
    await clock.advance(20_000);
    runner.stop();
    expect(overlap).toBe(false);
  });

  it('stops probing when stopped', async () => {
    const { attempts, runner, clock } = await run([ok], { periodMs: 1_000 }, 3_500);
    runner.stop();
    const before = attempts.length;
    await clock.advance(10_000);
    expect(attempts).toHaveLength(before);
  });
});
