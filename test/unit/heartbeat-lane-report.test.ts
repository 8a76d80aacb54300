import { afterEach, describe, expect, it, vi } from 'vitest';

import { logger, metrics } from '../../lib/observability.ts';
import { emptyResult, type HeartbeatLaneReport } from '../../lib/registration/sweep-result.ts';
import { reportHeartbeatLane } from '../../lib/sweep/heartbeat-lane-report.ts';

/**
 * A heartbeat lane's metrics and the operator's signal to add lanes: a warning when a pass
 * over the lane's share took longer than its period (half the shortest bound).
 */
afterEach(() => {
  vi.restoreAllMocks();
});

function reported(heartbeat: HeartbeatLaneReport) {
  const warned = vi.spyOn(logger, 'warn');
  const single = { addDimension: vi.fn(), addMetric: vi.fn() };
  vi.spyOn(metrics, 'singleMetric').mockReturnValue(single as never);
  reportHeartbeatLane({ ...emptyResult(false), heartbeat });
  const byName = (name: string) =>
    single.addMetric.mock.calls.filter(([metric]) => metric === name).map(([, , value]) => value);
  return {
    warnings: warned.mock.calls.map(([message]) => String(message)),
    lanes: single.addDimension.mock.calls.map(([, value]) => value),
    late: byName('HeartbeatPassesLate'),
    seconds: byName('HeartbeatPassSeconds'),
    checks: byName('HeartbeatChecks'),
  };
}

const LANE_2 = { lane: 2, planVersion: 4, checked: 16_700, shortestBoundMs: 30_000 };

describe('a heartbeat lane report', () => {
  it('warns to add lanes when a pass overran its 15 s period, though it stayed under the 30 s bound', () => {
    const run = reported({ ...LANE_2, passesMs: [18_800], periodMs: 15_000 });

    expect(run.warnings).toEqual([
      'heartbeat lane 2: a pass over its share took 18.8s, longer than its period 15s (half the shortest heartbeat bound 30s); add heartbeat lanes (heartbeatLanes) or lengthen the bound',
    ]);
    expect(run.late).toEqual([1]);
    expect(run.seconds).toEqual([18.8]);
    expect(run.checks).toEqual([16_700]);
    expect(new Set(run.lanes)).toEqual(new Set(['2']));
  });

  it('says nothing when every pass fit its period, and still counts 0 late', () => {
    const run = reported({ ...LANE_2, passesMs: [14_000, 13_500], periodMs: 15_000 });

    expect(run.warnings).toEqual([]);
    expect(run.late).toEqual([0]);
    expect(run.seconds).toEqual([14, 13.5]);
  });
});
