import { describe, expect, it } from 'vitest';
import { ENV, readConfig } from '../../lib/config.ts';
import {
  effectivePlan,
  FIRST_PLAN,
  type LanePlan,
  laneLoads,
  laneRangeOf,
  nextPlan,
  planFor,
  replaceRange,
} from '../../lib/domain/heartbeat-lanes.ts';

/** How lane 0 shares the heartbeat groups' entries among the lanes (pure: time is an argument). */
const T0 = Date.UTC(2026, 2, 1, 12);
const MINUTE = 60_000;

function names(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
}

/** Which lane takes `name` of group `key` under `plan` (exactly one must). */
function lanesOf(plan: LanePlan, key: string, name: string): number[] {
  return Array.from({ length: plan.lanes }, (_, lane) => lane).filter((lane) => {
    const range = laneRangeOf(plan, lane, key);
    return (
      range !== undefined &&
      (range.after === undefined || name > range.after) &&
      (range.upTo === undefined || name <= range.upTo)
    );
  });
}

describe('the lanes plan', () => {
  const samples = {
    'shop/big': names('big', 40),
    'shop/cart': ['cart-1'],
    'web/front': ['front-1'],
  };

  it('cuts a group larger than a share into contiguous ranges and gives each name to one lane', () => {
    const plan = planFor(3, samples, 1, T0);
    expect(plan.cut['shop/big']).toHaveLength(2);
    expect(plan.whole['shop/cart']).toBeDefined();
    for (const name of [...names('big', 40), 'big-', 'big-9999', 'big-0013x']) {
      expect(lanesOf(plan, 'shop/big', name)).toHaveLength(1);
    }
    expect(lanesOf(plan, 'web/front', 'front-7')).toEqual([plan.whole['web/front']]);
    // Even shares: 40 samples in three ranges of 13 or 14.
    const loads = laneLoads(plan, { 'shop/big': samples['shop/big'] });
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(25);
  });

  it('gives a group no pass has sampled to lane 0, whole', () => {
    const plan = planFor(3, samples, 1, T0);
    expect(lanesOf(plan, 'shop/new', 'new-1')).toEqual([0]);
    expect(lanesOf(FIRST_PLAN, 'shop/big', 'big-0001')).toEqual([0]);
  });

  it('takes effect from its `from`, not before', () => {
    const next = planFor(3, samples, 1, T0 + 30_000);
    expect(effectivePlan({ current: FIRST_PLAN, next }, T0)).toBe(FIRST_PLAN);
    expect(effectivePlan({ current: FIRST_PLAN, next }, T0 + 30_000)).toBe(next);
  });

  it('publishes a plan half a sweep interval ahead when the lanes change, and none while one is pending', () => {
    const published = nextPlan(undefined, 3, {}, false, T0, MINUTE);
    expect(published).toMatchObject({ version: 1, lanes: 3, from: T0 + 30_000 });
    const record = { current: FIRST_PLAN, next: published as LanePlan };
    expect(nextPlan(record, 3, samples, true, T0 + 10_000, MINUTE)).toBeUndefined();
  });

  it('keeps a plan that fits, and replaces one a grown group unbalanced, only from complete samples', () => {
    const current = planFor(3, samples, 2, T0);
    const record = { current };
    expect(nextPlan(record, 3, samples, true, T0 + MINUTE, MINUTE)).toBeUndefined();
    // The big group grew past its last range (names after the old split points).
    const grown = { ...samples, 'shop/big': [...samples['shop/big'], ...names('big-z', 60)] };
    expect(nextPlan(record, 3, grown, false, T0 + MINUTE, MINUTE)).toBeUndefined();
    const next = nextPlan(record, 3, grown, true, T0 + MINUTE, MINUTE);
    expect(next?.version).toBe(3);
    expect(next?.cut['shop/big']).not.toEqual(current.cut['shop/big']);
  });

  it('places a group sampled for the first time', () => {
    const current = planFor(3, samples, 2, T0);
    const next = nextPlan({ current }, 3, { ...samples, 'shop/new': ['new-1'] }, true, T0, MINUTE);
    expect(next?.whole['shop/new']).toBeDefined();
  });

  it("replaces a range's samples with a fresh reading of that range", () => {
    expect(replaceRange(['a', 'c', 'e', 'g'], { after: 'b', upTo: 'f' }, ['d'])).toEqual([
      'a',
      'd',
      'g',
    ]);
  });
});

describe('REGISTRAR_HEARTBEAT_LANES', () => {
  it('defaults to one lane and refuses a count outside 1-16, naming the variable and the value', () => {
    expect(readConfig({ [ENV.tableName]: 't' }).heartbeatLanes).toBe(1);
    expect(readConfig({ [ENV.tableName]: 't', [ENV.heartbeatLanes]: '16' }).heartbeatLanes).toBe(
      16,
    );
    for (const bad of ['0', '17', '1.5', 'x']) {
      expect(() => readConfig({ [ENV.tableName]: 't', [ENV.heartbeatLanes]: bad })).toThrow(
        `REGISTRAR_HEARTBEAT_LANES (value '${bad}'): must be a whole number from 1 to 16`,
      );
    }
  });
});
