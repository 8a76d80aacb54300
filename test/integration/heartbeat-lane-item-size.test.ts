import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  boundedSamples,
  FIRST_PLAN,
  laneLoads,
  MAX_LANE_SAMPLES,
  planFor,
  SAMPLE_EVERY,
} from '../../lib/domain/heartbeat-lanes.ts';
import {
  type LaneRun,
  recordStretch,
  saveLane,
} from '../../lib/registration/heartbeat-lane-state.ts';
import { emptyResult } from '../../lib/registration/sweep-result.ts';
import { sweeperStore } from '../../lib/wiring/sweeper-store.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Issue 44, item 4: a heartbeat lane's item (its cursors and the names its passes sampled)
 * does not grow with the fleet past DynamoDB's 400 KB item. A lane whose share is one group of
 * 600,000 VMs samples 24,000 names a pass (one in 25): written as before, its item is refused
 * by DynamoDB's limit (dynalite enforces it); written now, its samples are thinned to
 * MAX_LANE_SAMPLES, each standing for more names, and the plans made from them still share
 * the group evenly.
 */
let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

const VMS = 600_000;
/** Entry names as the registrar makes them (`<group>-<address>`), in name order. */
function names(count: number, every: number): string[] {
  const all: string[] = [];
  for (let i = 0; i < count; i += every) {
    all.push(`big-10-${(i >> 16) & 255}-${(i >> 8) & 255}-${i & 255}`);
  }
  return all.sort();
}

function laneOf(): LaneRun {
  return {
    lane: 1,
    plan: FIRST_PLAN,
    share: [{ ref: { namespace: 'shop', name: 'big' }, range: {} }],
    state: { planVersion: 0, cursors: {}, complete: true, samples: {} },
    sampling: true,
    observed: {},
  };
}

describe("a heartbeat lane's item", () => {
  it('stays under 400 KB with a share of 600,000 VMs, where the unbounded one is refused', async () => {
    const { client, tableName } = await freshRegistry(dynamo.endpoint, 'lane-size');
    const lanes = sweeperStore(client, tableName);
    const sampled = names(VMS, SAMPLE_EVERY);
    expect(sampled.length).toBe(VMS / SAMPLE_EVERY);

    // As a release before this one wrote it: every sample, ~24,000 names.
    await expect(
      lanes.saveHeartbeatLane(1, {
        planVersion: 0,
        cursors: {},
        complete: true,
        samples: { 'shop/big': sampled },
      }),
    ).rejects.toThrow(/size/i);

    // As a pass records it now: the stretch read, then the lane's save.
    const run = laneOf();
    recordStretch(run, {
      group: { namespace: 'shop', name: 'big' },
      range: {},
      samples: sampled,
    });
    const result = emptyResult(false);
    await saveLane(lanes, run, result);
    expect(result.failed).toBe(0);
    const stored = await lanes.heartbeatLane(1);
    const kept = stored?.samples['shop/big'] ?? [];
    expect(kept.length).toBeLessThanOrEqual(MAX_LANE_SAMPLES);
    expect(stored?.sampleEvery).toBe(SAMPLE_EVERY * 8);
    expect(JSON.stringify(stored).length).toBeLessThan(200 * 1024);

    // The next pass's samples are thinned to the same stride before they replace a range.
    recordStretch(run, {
      group: { namespace: 'shop', name: 'big' },
      range: {},
      samples: sampled,
    });
    expect(run.state.samples['shop/big']).toEqual(kept);
  }, 60_000);

  it('still shares the group evenly among the lanes from thinned samples', () => {
    const { samples, every } = boundedSamples(
      { 'shop/big': names(VMS, SAMPLE_EVERY) },
      SAMPLE_EVERY,
    );
    const plan = planFor(16, samples, 1, 0);
    const loads = laneLoads(plan, samples, every);
    const even = VMS / 16;
    for (const load of loads) expect(Math.abs(load - even) / even).toBeLessThan(0.02);
    expect(loads.reduce((a, b) => a + b, 0)).toBeGreaterThan(VMS * 0.99);
  });
});
