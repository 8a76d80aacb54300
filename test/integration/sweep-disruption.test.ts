import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cellKey } from '../../lib/domain/disruption.ts';
import type { SweepPolicy } from '../../lib/domain/sweep-policy.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { runSweep, type SweepOptions } from '../../lib/registration/sweep.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import { CELL_SPREAD, ZONE_SHARDS, zoneShardOf } from '../../lib/store/table-definition.ts';
import { connectChange as storeConnect } from '../fixtures/connect-change.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import {
  DEFAULT_FAIL_STATIC,
  DEFAULT_SWEEP_POLICY,
  HOUR,
  MINUTE,
} from '../fixtures/sweep-policies.ts';

const policy: SweepPolicy = DEFAULT_SWEEP_POLICY;
const failStatic = DEFAULT_FAIL_STATIC;
const T0 = Date.UTC(2025, 5, 1, 12);
const NS = 'shop';
const ZONE_A = 'eu-west-1/eu-west-1a';
const ZONE_B = 'eu-west-1/eu-west-1b';

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

function freshStore() {
  return freshRegistry(dynamo.endpoint, 'disruption');
}

function connectChange(name: string, zone: string, at: number) {
  return storeConnect({
    name,
    namespace: NS,
    connectionId: `${name}-c${at}`,
    connectedAt: at,
    locality: `${zone}/rack-1`,
  });
}

type Store = RegistrarStore;

/** Connects `count` VMs in a zone at `at`; returns their names. */
async function fleet(store: Store, prefix: string, zone: string, count: number, at: number) {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  await Promise.all(names.map((name) => store.connect(connectChange(name, zone, at))));
  return names;
}

async function leaveAll(
  store: Store,
  names: string[],
  connectedAt: number,
  at: number,
  departure: 'clean' | 'abnormal',
) {
  await Promise.all(
    names.map((name) =>
      store.leave({
        connectionId: `${name}-c${connectedAt}`,
        entry: { namespace: NS, name },
        at,
        departure,
      }),
    ),
  );
}

function sweep(store: Store, now: number, overrides: Partial<SweepOptions> = {}) {
  return runSweep(store, {
    now,
    policy,
    maxDeletes: 1000,
    deletesPerSecond: 50,
    sleep: async () => {},
    failStatic,
    ...overrides,
  });
}

async function remaining(store: Store, names: string[]) {
  const found = await Promise.all(names.map((name) => store.getEntry({ namespace: NS, name })));
  return found.filter((entry) => entry !== undefined).length;
}

describe('zone counters', () => {
  it('count connected, abnormally away and cleanly left entries per zone, and follow reconnects and deletes', async () => {
    const { store } = await freshStore();
    const a = await fleet(store, 'a', ZONE_A, 4, T0);
    await fleet(store, 'b', ZONE_B, 2, T0);
    await leaveAll(store, a.slice(0, 2), T0, T0 + 1, 'abnormal');
    await leaveAll(store, a.slice(2, 3), T0, T0 + 1, 'clean');

    expect(await store.zoneCounts()).toEqual([
      { namespace: NS, zone: ZONE_A, connected: 1, away: 2, left: 1 },
      { namespace: NS, zone: ZONE_B, connected: 2, away: 0, left: 0 },
    ]);

    // One comes back, the clean one and one abnormal one are swept.
    await store.connect(connectChange('a-0', ZONE_A, T0 + 2));
    await sweep(store, T0 + 1 + policy.gracePeriodMs);

    expect(await store.zoneCounts()).toEqual([
      { namespace: NS, zone: ZONE_A, connected: 2, away: 0, left: 0 },
      { namespace: NS, zone: ZONE_B, connected: 2, away: 0, left: 0 },
    ]);
  });

  it('count a liveness check that finds the last holder gone as an abnormal departure', async () => {
    const { store } = await freshStore();
    await fleet(store, 'p', ZONE_A, 1, T0);
    await store.dropHolders({ namespace: NS, name: 'p-0' }, [`p-0-c${T0}`], T0 + MINUTE);
    expect(await store.zoneCounts()).toEqual([
      { namespace: NS, zone: ZONE_A, connected: 0, away: 1, left: 0 },
    ]);
  });
});

describe('disruption-aware sweeping', () => {
  it('removes a lost zone at the secondary rate and the other zones at the normal rate', async () => {
    const { store } = await freshStore();
    const a = await fleet(store, 'a', ZONE_A, 20, T0);
    const b = await fleet(store, 'b', ZONE_B, 20, T0);
    // Zone A: 60% drop abnormally (an AZ outage). Zone B: 2 VMs stop cleanly, 2 crash.
    await leaveAll(store, a.slice(0, 12), T0, T0 + MINUTE, 'abnormal');
    await leaveAll(store, b.slice(0, 2), T0, T0 + MINUTE, 'clean');
    await leaveAll(store, b.slice(2, 4), T0, T0 + MINUTE, 'abnormal');
    // Zone B keeps connecting (a rotation): not every zone is disrupted, connects happen.
    await store.connect(connectChange('b-19', ZONE_B, T0 + 5 * MINUTE));

    const due = T0 + MINUTE + policy.gracePeriodMs;
    const first = await sweep(store, due);

    expect(first.disruption).toMatchObject({ mode: 'normal' });
    expect(first.disruption?.zones.find((z) => z.zone === ZONE_A)).toMatchObject({
      disrupted: true,
      share: 0.6,
    });
    // Zone B: all 4 departed VMs at once; zone A: what one run may delete in a slowed cell,
    // the smaller of one interval at the secondary rate (0.1/s x 60 s = 6) and 10% of its 20
    // (2); the other 10 deferred.
    expect(first.deleted.filter((e) => e.name.startsWith('b-'))).toHaveLength(4);
    expect(first.deleted.filter((e) => e.name.startsWith('a-'))).toHaveLength(2);
    expect(first.slowed).toEqual({ [cellKey(NS, ZONE_A)]: 10 });

    // 30 s later half an interval's credit (3), still at most 2 a run.
    const second = await sweep(store, due + 30_000);
    expect(second.deleted.map((e) => e.name).filter((n) => n.startsWith('a-'))).toHaveLength(2);
    expect(second.slowed).toEqual({ [cellKey(NS, ZONE_A)]: 8 });
    expect(await remaining(store, a.slice(0, 12))).toBe(8);
  });

  it('deletes a slowed 3-VM zone one VM a run, never whole in one run', async () => {
    // Issue 35: 0.1/s gives a run 6 deletions, so a 3-VM zone whose agents were all killed
    // left whole in the first run after its grace. A slowed cell's run is also bounded by
    // its size: 10% of it, at least one.
    const { store } = await freshStore();
    const a = await fleet(store, 'a', ZONE_A, 3, T0);
    await fleet(store, 'b', ZONE_B, 10, T0);
    await leaveAll(store, a, T0, T0 + MINUTE, 'abnormal');

    const due = T0 + MINUTE + policy.gracePeriodMs;
    const runs = [];
    for (let run = 0; run < 3; run++) runs.push(await sweep(store, due + run * MINUTE));

    expect(runs[0]?.disruption?.zones.find((z) => z.zone === ZONE_A)).toMatchObject({
      disrupted: true,
    });
    expect(runs.map((run) => run.deleted.length)).toEqual([1, 1, 1]);
    expect(runs[0]?.slowed).toEqual({ [cellKey(NS, ZONE_A)]: 2 });
    expect(await remaining(store, a)).toBe(0);
  });

  it('holds every abnormal departure when all zones are disrupted, and keeps removing clean ones', async () => {
    const { store } = await freshStore();
    const a = await fleet(store, 'a', ZONE_A, 50, T0);
    const b = await fleet(store, 'b', ZONE_B, 50, T0);
    // 30 VMs stop cleanly, then the gateway fails: every other connection drops at once.
    const stopping = [...a.slice(0, 15), ...b.slice(0, 15)];
    await leaveAll(store, stopping, T0, T0 + MINUTE, 'clean');
    const dropped = [...a.slice(15), ...b.slice(15)];
    await leaveAll(store, dropped, T0, T0 + MINUTE, 'abnormal');

    const now = T0 + MINUTE + 3 * policy.gracePeriodMs;
    const result = await sweep(store, now);

    expect(result.disruption).toMatchObject({
      mode: 'held',
      reason: 'all-zones-disrupted',
      holdUntil: now + HOUR,
      away: 70,
    });
    expect(result.deleted.map((e) => e.name).sort()).toEqual([...stopping].sort());
    expect(result.held).toEqual({ [cellKey(NS, ZONE_A)]: 35, [cellKey(NS, ZONE_B)]: 35 });
    expect(await remaining(store, dropped)).toBe(70);
    expect(await store.disruptionRecord()).toMatchObject({ mode: 'held', holdSince: now });
  });

  it('reads O(zones + shards) requests to decide, and each held entry once to count it', async () => {
    const reads = async (count: number) => {
      const { store, client } = await freshStore();
      const names = await fleet(store, 'v', ZONE_A, count, T0);
      await leaveAll(store, names, T0, T0 + MINUTE, 'abnormal');
      const requests = countRequests(client);
      const result = await sweep(store, T0 + 20 * MINUTE);
      expect(result.disruption?.mode).toBe('held');
      // One counter item per counter shard its entries hash to (one zone here).
      const counterItems = new Set(names.map((name) => zoneShardOf({ namespace: NS, name }))).size;
      return { counts: requests.counts(), items: requests.itemsRead(), counterItems };
    };
    const few = await reads(5);
    const many = await reads(60);

    // The same requests whatever the number held: 1 GetItem (the record), 32 Queries for the
    // cell counters (the shards), 4 for the newest connect, 8 to count the away entries from
    // the index (0.1.0's shared keys and the namespace's own: the counters may drift;
    // AWAY_RECOUNT_LIMIT bounds it), 1 for the namespace index, 4 + 4 for clean departures
    // (the shared keys and the namespace's own; its abnormal ones are not read); 1 write.
    expect(many.counts).toEqual(few.counts);
    expect(few.counts).toEqual({ GetItem: 1, Query: ZONE_SHARDS + 4 + 8 + 1 + 8, UpdateItem: 1 });
    // Items: one more per held entry (the count), and the cell's counter items (at most
    // CELL_SPREAD), never the held entries' deletion path.
    expect(many.counterItems).toBeLessThanOrEqual(CELL_SPREAD);
    expect(many.items - few.items).toBe(60 - 5 + many.counterItems - few.counterItems);
  });

  it('resumes normal pacing once a hold outlives its bound, and says so', async () => {
    const { store } = await freshStore();
    const names = await fleet(store, 'v', ZONE_A, 10, T0);
    await leaveAll(store, names, T0, T0 + MINUTE, 'abnormal');
    const start = T0 + MINUTE + policy.gracePeriodMs;
    expect((await sweep(store, start)).deleted).toHaveLength(0);
    expect((await sweep(store, start + HOUR - 1)).deleted).toHaveLength(0);

    const sleeps: number[] = [];
    const after = await sweep(store, start + HOUR, {
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });

    expect(after.disruption).toMatchObject({ mode: 'hold-expired', holdSince: start });
    expect(after.deleted).toHaveLength(10);
    expect(after.afterHoldBound).toEqual({ [cellKey(NS, ZONE_A)]: 10 });
    // Paced at the normal 50/s: one every 20 ms.
    expect(sleeps).toEqual(Array(9).fill(20));
  });

  it('holds when entries went away abnormally and no VM could connect for the window', async () => {
    const { store } = await freshStore();
    // 130 VMs rotating at least every 2 h should make 5 connects in 5 minutes: none is telling.
    const a = await fleet(store, 'a', ZONE_A, 10, T0);
    await fleet(store, 'b', ZONE_B, 120, T0);
    await leaveAll(store, a.slice(0, 3), T0, T0 + MINUTE, 'abnormal');

    const result = await sweep(store, T0 + 10 * MINUTE);

    expect(result.disruption).toMatchObject({ mode: 'held', reason: 'no-connects' });
    expect(result.deleted).toEqual([]);
    // A connect anywhere ends it.
    await store.connect(connectChange('b-0', ZONE_B, T0 + 11 * MINUTE));
    const next = await sweep(store, T0 + 12 * MINUTE);
    expect(next.disruption?.mode).toBe('normal');
    expect(next.deleted).toHaveLength(3);
  });

  it('does not read a quiet window as an outage in a fleet too small to have rotated in it', async () => {
    const { store } = await freshStore();
    // 20 VMs make under one connect per 5 minutes: a crashed VM is deleted after its grace.
    const a = await fleet(store, 'a', ZONE_A, 10, T0);
    await fleet(store, 'b', ZONE_B, 10, T0);
    await leaveAll(store, a.slice(0, 2), T0, T0 + MINUTE, 'abnormal');

    const result = await sweep(store, T0 + 10 * MINUTE);

    expect(result.disruption?.mode).toBe('normal');
    expect(result.deleted).toHaveLength(2);
  });

  it('releases a hold on the operator word, until the disruption is over', async () => {
    const { store } = await freshStore();
    const names = await fleet(store, 'v', ZONE_A, 5, T0);
    await leaveAll(store, names, T0, T0 + MINUTE, 'abnormal');
    const now = T0 + 10 * MINUTE;
    expect((await sweep(store, now)).disruption?.mode).toBe('held');

    expect(await store.releaseHold(now + 1)).toBe('released');
    const released = await sweep(store, now + MINUTE);

    expect(released.disruption).toMatchObject({ mode: 'released', releasedAt: now + 1 });
    expect(released.deleted).toHaveLength(5);
    // Nothing is left away: the disruption is over, and the release with it.
    const after = await sweep(store, now + 2 * MINUTE);
    expect(after.disruption?.mode).toBe('normal');
    expect((await store.disruptionRecord())?.releasedAt).toBeUndefined();
    expect(await store.releaseHold(now + 3 * MINUTE)).toBe('normal');
  });
});
