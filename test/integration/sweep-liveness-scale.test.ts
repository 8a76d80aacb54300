import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import type { LivenessAnswer } from '../../lib/registration/liveness.ts';
import { runSweep, type SweepOptions } from '../../lib/registration/sweep.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Liveness checks at fleet size: side by side (bounded), in due-time order, and resumable. A
 * run cut short at its deadline leaves the mark at the first entry it did not check, so the
 * next run checks exactly the rest: nothing twice, nothing skipped. Real store (dynalite);
 * the management API is a stand-in that records each call.
 */
const MINUTE = 60_000;
const NOW = Date.UTC(2025, 5, 1, 12);
const NS = 'fleet';
const policy = {
  gracePeriodMs: 5 * MINUTE,
  maxConnectionAgeMs: 120 * MINUTE,
  livenessIntervalMs: 5 * MINUTE,
  sweepIntervalMs: MINUTE,
};

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

function change(name: string, connectedAt: number) {
  return connectChange({ name, namespace: NS, connectionId: `conn-${name}`, connectedAt });
}

/**
 * `count` entries whose checks fall due across the last sweep interval before NOW, spread over
 * different multiples of the liveness interval (so they come from different index windows).
 */
async function fleet(count: number): Promise<RegistrarStore> {
  const { store } = await freshRegistry(dynamo.endpoint, 'liveness-scale');
  for (let i = 0; i < count; i++) {
    const dueAt = NOW - MINUTE + Math.floor((i * MINUTE) / count);
    const intervals = 1 + (i % 7);
    await store.connect(change(`vm-${i}`, dueAt - intervals * policy.livenessIntervalMs));
  }
  await store.setLivenessMark(NOW - MINUTE);
  return store;
}

/** A management API stand-in: every connection alive, answers after a turn of the event loop. */
function standIn(answer: (connectionId: string) => LivenessAnswer = () => 'alive') {
  const calls: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  return {
    calls,
    maxInFlight: () => maxInFlight,
    check: async (connectionId: string): Promise<LivenessAnswer> => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      calls.push(connectionId);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight -= 1;
      return answer(connectionId);
    },
  };
}

function options(extra: Partial<SweepOptions>): SweepOptions {
  return { now: NOW, policy, maxDeletes: 100, deletesPerSecond: 1_000, ...extra };
}

describe('liveness checks at fleet size', () => {
  it('checks every due entry once, side by side but never more than the bound at once', async () => {
    const store = await fleet(60);
    const api = standIn();
    const result = await runSweep(store, options({ liveness: api, livenessConcurrency: 8 }));
    expect(result.livenessChecked).toBe(60);
    expect(new Set(api.calls).size).toBe(60);
    expect(api.maxInFlight()).toBe(8);
    expect(await store.livenessMark()).toBe(NOW);
  });

  it('checks in due-time order across the index windows', async () => {
    const store = await fleet(30);
    const api = standIn();
    await runSweep(store, options({ liveness: api, livenessConcurrency: 1 }));
    const order = api.calls.map((id) => Number(id.replace('conn-vm-', '')));
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it('a run cut short resumes where it stopped: nothing checked twice, nothing skipped', async () => {
    const store = await fleet(50);
    const api = standIn();
    let budget = 20;
    const first = await runSweep(
      store,
      options({ liveness: api, livenessConcurrency: 4, outOfTime: () => budget-- <= 0 }),
    );
    expect(first.stoppedEarly).toBe(true);
    expect(first.livenessChecked).toBeGreaterThan(0);
    expect(first.livenessChecked).toBeLessThan(50);
    const mark = await store.livenessMark();
    expect(mark).toBeGreaterThan(NOW - MINUTE);
    expect(mark).toBeLessThan(NOW);

    const second = await runSweep(store, options({ liveness: api, now: NOW + 1 }));
    expect(second.stoppedEarly).toBe(false);
    // Every entry once over both runs (the second run's span also holds nothing new).
    expect(api.calls.length).toBe(50);
    expect(new Set(api.calls).size).toBe(50);
    expect(await store.livenessMark()).toBe(NOW + 1);
  });

  it('counts the checks API Gateway cannot answer, with the cause, and drops no one', async () => {
    const store = await fleet(10);
    const api = standIn((id) =>
      id.endsWith('-3') ? { unknown: 'AccessDeniedException: not authorized' } : 'alive',
    );
    const result = await runSweep(store, options({ liveness: api }));
    expect(result.livenessChecked).toBe(10);
    expect(result.livenessUnknown).toBe(1);
    expect(result.firstUnknown).toBe('AccessDeniedException: not authorized');
    expect(result.phantomsDropped).toBe(0);
    // An unanswered check is not retried by holding the mark: the next interval asks again.
    expect(await store.livenessMark()).toBe(NOW);
  });
});
