import { describe, expect, it } from 'vitest';
import { PacedPool } from '../../lib/rollout/paced-pool.ts';
import { DEFAULT_PACE, paceOf, parsePace, stepSize } from '../../lib/rollout/rollout-pace.ts';
import {
  afterPage,
  MAX_PASSES,
  nextStep,
  startedRollout,
  steppedRollout,
} from '../../lib/rollout/rollout-progress.ts';
import type { RolloutRecord } from '../../lib/rollout/rollout-store.ts';

const T0 = 1_000_000;
const GROUP = { namespace: 'shop', name: 'web' };

describe('the pace annotation', () => {
  it.each([
    ['25%/10s', { step: { share: 0.25 }, intervalMs: 10_000 }],
    ['500/30s', { step: { count: 500 }, intervalMs: 30_000 }],
    [' 100% / 1m ', { step: { share: 1 }, intervalMs: 60_000 }],
  ])('reads %j', (text, pace) => {
    expect(parsePace(text)).toMatchObject(pace);
  });

  it.each([
    ['fast', 'write <entries>/<interval>'],
    ['0/10s', 'a whole number, 1 or more'],
    ['1.5/10s', 'a whole number, 1 or more'],
    ['0%/10s', 'more than 0%'],
    ['150%/10s', 'at most 100%'],
    ['10/500ms', 'from 1s to 1h'],
    ['10/2h', 'from 1s to 1h'],
  ])('refuses %j, naming the annotation and the value', (text, problem) => {
    const parsed = parsePace(text);
    expect(parsed).toEqual({ problem: expect.stringContaining(problem) });
    expect((parsed as { problem: string }).problem).toContain(
      `workload-registrar/rollout-pace '${text}'`,
    );
  });

  it('falls back to the default for a group without it, or with one it cannot read', () => {
    const group = (annotations?: Record<string, string>) =>
      ({
        metadata: { name: 'web', namespace: 'shop', ...(annotations ? { annotations } : {}) },
      }) as never;
    expect(paceOf(group())).toEqual({ pace: DEFAULT_PACE });
    expect(paceOf(group({ 'workload-registrar/rollout-pace': 'x' }))).toMatchObject({
      pace: DEFAULT_PACE,
      problem: expect.stringContaining("'x'"),
    });
  });

  it('steps at least one entry, and a share of the group rounded up', () => {
    expect(stepSize(DEFAULT_PACE, 20_000)).toBe(5_000);
    expect(stepSize(DEFAULT_PACE, 3)).toBe(1);
    expect(stepSize(DEFAULT_PACE, 0)).toBe(1);
    expect(stepSize(parsePace('7/1s') as never, 3)).toBe(7);
  });
});

describe("a rollout's progress", () => {
  const pace = parsePace('2/10s') as Exclude<ReturnType<typeof parsePace>, { problem: string }>;
  const fresh = () => startedRollout(undefined, GROUP, 2, 5, T0);

  it('starts a step, waits for the interval once the step is written, then starts the next', () => {
    let record = fresh();
    const first = nextStep(record, pace, T0);
    expect(first).toEqual({ kind: 'write', quota: 2, newStepAt: T0 });
    record = steppedRollout(record, first);
    record = afterPage(
      record,
      { updated: 2, waiting: 0, skipped: 0, next: 'WE#b' },
      T0 + 100,
      1_000,
    );
    expect(nextStep(record, pace, T0 + 5_000)).toEqual({ kind: 'wait', until: T0 + 10_000 });
    expect(nextStep(record, pace, T0 + 10_000)).toEqual({
      kind: 'write',
      quota: 2,
      newStepAt: T0 + 10_000,
    });
  });

  it('continues a step a page did not finish', () => {
    let record = steppedRollout(fresh(), nextStep(fresh(), pace, T0));
    record = afterPage(record, { updated: 1, waiting: 3, skipped: 0, next: 'WE#c' }, T0, 1_000);
    expect(nextStep(record, pace, T0)).toEqual({ kind: 'write', quota: 1 });
    expect(record).toMatchObject({ updated: 1, waiting: 3, cursor: 'WE#c' });
  });

  it('completes at the end of the entries, and rechecks later when some were left', () => {
    const done = afterPage(
      fresh(),
      { updated: 2, waiting: 1, skipped: 0, next: undefined },
      T0,
      300_000,
    );
    expect(done).toMatchObject({ completedAt: T0, recheckAt: T0 + 300_000 });
    expect(done.cursor).toBeUndefined();
    expect(nextStep(done, pace, T0 + 1)).toEqual({ kind: 'idle' });
    const recheck = nextStep(done, pace, T0 + 300_000);
    expect(recheck).toMatchObject({ kind: 'write', repass: true });
    expect(steppedRollout(done, recheck)).toMatchObject({ pass: 1, waiting: 0 });
    expect(steppedRollout(done, recheck).completedAt).toBeUndefined();
  });

  it('repeats a pass that lost races at once, at most MAX_PASSES times, then leaves it to a recheck', () => {
    let record: RolloutRecord = fresh();
    for (let pass = 1; pass < MAX_PASSES; pass++) {
      record = afterPage(
        record,
        { updated: 0, waiting: 0, skipped: 1, next: undefined },
        T0,
        300_000,
      );
      expect(record).toMatchObject({ pass: pass + 1, skipped: 0 });
      expect(record.completedAt).toBeUndefined();
    }
    record = afterPage(
      record,
      { updated: 0, waiting: 0, skipped: 1, next: undefined },
      T0,
      300_000,
    );
    expect(record).toMatchObject({ completedAt: T0, recheckAt: T0 + 300_000 });
  });

  it('is paused while the operator says so, and a new generation keeps the pause', () => {
    const paused = { ...fresh(), pausedAt: T0 };
    expect(nextStep(paused, pace, T0)).toEqual({ kind: 'paused' });
    expect(startedRollout(paused, GROUP, 3, 5, T0).pausedAt).toBe(T0);
  });
});

describe('the paced pool', () => {
  it('keeps to its rate and its concurrency on the given clock', async () => {
    let now = 0;
    let inFlight = 0;
    let most = 0;
    const starts: number[] = [];
    const pool = new PacedPool({
      concurrency: 3,
      perSecond: 10,
      now: () => now,
      // A timer: it ends at its time, whoever else is waiting.
      sleep: async (ms) => {
        const until = now + ms;
        await Promise.resolve();
        now = Math.max(now, until);
      },
    });
    const results = await pool.map([1, 2, 3, 4, 5, 6], async (n) => {
      starts.push(now);
      inFlight += 1;
      most = Math.max(most, inFlight);
      await Promise.resolve();
      inFlight -= 1;
      return n * 2;
    });
    expect(results).toEqual([2, 4, 6, 8, 10, 12]);
    expect(most).toBeLessThanOrEqual(3);
    // 6 starts at 10/s: the last 500 ms after the first.
    expect(Math.max(...starts) - Math.min(...starts)).toBeGreaterThanOrEqual(500);
  });

  it('refuses a rate or a concurrency that cannot pace', () => {
    const clock = { now: () => 0, sleep: async () => {} };
    expect(() => new PacedPool({ concurrency: 0, perSecond: 1, ...clock })).toThrow(RangeError);
    expect(() => new PacedPool({ concurrency: 1, perSecond: 0, ...clock })).toThrow(RangeError);
  });
});
