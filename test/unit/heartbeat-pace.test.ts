import { describe, expect, it } from 'vitest';
import {
  checksPerMinute,
  demandPerMinute,
  groupPeriodMs,
  quotaStretch,
} from '../../lib/domain/heartbeat-pace.ts';
import { GroupSchedule } from '../../lib/registration/heartbeat-schedule.ts';

const MINUTE = 60_000;

describe("a group's pace", () => {
  it('is half its own bound, 5 s to one run, whatever other groups set', () => {
    expect(groupPeriodMs(10_000, undefined, MINUTE)).toBe(5_000);
    expect(groupPeriodMs(30_000, undefined, MINUTE)).toBe(15_000);
    expect(groupPeriodMs(180_000, undefined, MINUTE)).toBe(MINUTE);
  });

  it('follows a holder still held to a shorter bound it was told before a change', () => {
    // 60 s x 3 now, but a holder has not acknowledged the change from 5 s x 2.
    expect(groupPeriodMs(180_000, 10_000, MINUTE)).toBe(5_000);
    // A longer bound a holder keeps never slows the group's own pace.
    expect(groupPeriodMs(10_000, 600_000, MINUTE)).toBe(5_000);
  });

  it('is stretched by its namespace over quota, never past one run', () => {
    expect(groupPeriodMs(10_000, undefined, MINUTE, 3)).toBe(15_000);
    expect(groupPeriodMs(10_000, undefined, MINUTE, 100)).toBe(MINUTE);
  });
});

describe("a namespace's heartbeat checks a minute", () => {
  it('count each held VM at its group checks a minute', () => {
    expect(checksPerMinute(5_000)).toBe(12);
    expect(checksPerMinute(15_000)).toBe(4);
    expect(checksPerMinute(MINUTE)).toBe(1);
    expect(
      demandPerMinute([
        { group: 'evil/a', held: 400, periodMs: 5_000 },
        { group: 'evil/b', held: 10, periodMs: MINUTE },
      ]),
    ).toBe(4_810);
  });

  it('stretch the namespace only over its quota', () => {
    expect(quotaStretch(4_800, 1_200)).toBe(4);
    expect(quotaStretch(1_000, 1_200)).toBe(1);
  });
});

describe("a run's schedule of groups", () => {
  const groups = new Map([
    ['evil/spam', { heartbeat: { intervalMs: 5_000, misses: 2 }, since: 0 }],
    ['shop/web', { heartbeat: { intervalMs: 60_000, misses: 3 }, since: 0 }],
  ]);
  const share = [
    { ref: { namespace: 'evil', name: 'spam' }, range: {} },
    { ref: { namespace: 'shop', name: 'web' }, range: {} },
  ];

  it("checks shop's 60 s x 3 once a run however short evil's heartbeat", () => {
    const schedule = new GroupSchedule(MINUTE);
    schedule.plan(share, groups, {}, {}, 0);
    const passes: string[][] = [];
    for (let t = 0; t < MINUTE; t = schedule.earliest()) {
      const due = schedule.due(t);
      passes.push(due);
      schedule.passed(due, t);
    }
    expect(passes.filter((due) => due.includes('shop/web'))).toHaveLength(1);
    expect(passes.filter((due) => due.includes('evil/spam'))).toHaveLength(12);
  });

  it('stretches only the namespace over its quota', () => {
    const schedule = new GroupSchedule(MINUTE);
    schedule.plan(
      share,
      groups,
      { 'evil/spam': { held: 400 }, 'shop/web': { held: 40 } },
      { evil: 1_200, shop: 40 },
      0,
    );
    // evil asks 400 x 12 = 4,800 checks a minute, four times its quota: every 20 s.
    expect(schedule.periodOf('evil/spam')).toBe(20_000);
    expect(schedule.pace.get('evil')).toEqual({ demand: 4_800, quota: 1_200, stretch: 4 });
    expect(schedule.periodOf('shop/web')).toBe(MINUTE);
    expect(schedule.pace.get('shop')?.stretch).toBe(1);
  });
});
