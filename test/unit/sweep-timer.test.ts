import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startSweepTimer } from '../../infra/local/sweep-timer.ts';

/** The local schedule on fake timers: each run takes as long as the test says. */
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function runs(durations: number[]) {
  const started: number[] = [];
  let active = 0;
  let overlapped = false;
  const run = async () => {
    started.push(Date.now());
    active += 1;
    if (active > 1) overlapped = true;
    await new Promise((resolve) => setTimeout(resolve, durations.shift() ?? 10));
    active -= 1;
  };
  return { run, started, overlapped: () => overlapped };
}

/** Stops the schedule, letting a run in progress finish on the fake clock. */
async function stopped(timer: { stop(): Promise<void> }) {
  const stopping = timer.stop();
  await vi.advanceTimersByTimeAsync(100);
  await stopping;
}

describe('the local sweep schedule', () => {
  it('starts the next run as soon as one that overran a tick ends, never two at once', async () => {
    const t0 = Date.now();
    // The first run (at start) is quick; the second overruns the 300 ms tick by 50 ms.
    const schedule = runs([10, 350, 10, 10]);
    const timerStarted = startSweepTimer(schedule.run, 300, () => {});
    await vi.advanceTimersByTimeAsync(10);
    const timer = await timerStarted;
    await vi.advanceTimersByTimeAsync(1_000);
    await stopped(timer);

    const at = schedule.started.map((time) => time - t0);
    // The schedule starts once the first run is done (10 ms): 0, the 310 ms tick, then 660 ms
    // right after the long run, not at the 910 ms tick.
    expect(at.slice(0, 3)).toEqual([0, 310, 660]);
    expect(schedule.overlapped()).toBe(false);
  });

  it('runs once for every tick a long run overran, not once per tick', async () => {
    const t0 = Date.now();
    const schedule = runs([10, 1_000, 10]);
    const timerStarted = startSweepTimer(schedule.run, 300, () => {});
    await vi.advanceTimersByTimeAsync(10);
    const timer = await timerStarted;
    await vi.advanceTimersByTimeAsync(1_500);
    await stopped(timer);

    const at = schedule.started.map((time) => time - t0);
    // Ticks at 610, 910 and 1210 were overrun: one catch-up at 1310, then the 1510 tick.
    expect(at.slice(0, 4)).toEqual([0, 310, 1_310, 1_510]);
  });
});
