import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler, type SweeperSummary } from '../../functions/sweeper.ts';
import { ENV, readConfig } from '../../lib/config.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import type { LivenessAnswer } from '../../lib/registration/liveness.ts';
import {
  sweeperStore as composeSweeperStore,
  type SweeperStore,
} from '../../lib/wiring/sweeper-store.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { heartbeatGroup, vmConnect } from '../fixtures/heartbeat-fleet.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * Heartbeat lanes (lib/domain/heartbeat-lanes.ts) through the deployed sweeper handler over
 * dynalite: lane 0 is the plain schedule tick, lanes 1 and 2 the events `{heartbeatLane: k}`
 * the stack's lane rule sends. API Gateway's GetConnection is a stand-in that counts the
 * calls for each connection and answers `lastActiveAt` (now for a VM that pings, an old time
 * for one that fell silent). Each round runs the three lanes of one schedule tick one after
 * another, at the tick's time.
 */
const T0 = Date.UTC(2026, 2, 1, 12);
const TICK = 10_000;
const LANES = 3;
/** Larger than one lane's share (~1/3 of 174 entries), so the plan cuts it into ranges. */
const BIG = 150;
const SMALL = 8;
const SMALL_GROUPS = [
  { namespace: 'shop', name: 'cart' },
  { namespace: 'shop', name: 'pay' },
  { namespace: 'web', name: 'front' },
];

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

function group(namespace: string, name: string): WorkloadGroup {
  return heartbeatGroup(namespace, name, { intervalMs: 10_000, misses: 3 });
}

function vm(namespace: string, name: string, i: number, at: number): ConnectChange {
  const ip = `10.${SMALL_GROUPS.findIndex((g) => g.name === name) + 2}.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  const connectionId = `${name}-${i}`;
  return vmConnect({ namespace, group: name, ip, at, connectionId, agentVersion: '0.2.0' });
}

/** The registry, the handler for `lanes` lanes, and a GetConnection stand-in that counts. */
async function lanesBed(options: { big?: number } = {}) {
  const { client, tableName, store } = await freshRegistry(dynamo.endpoint, 'lanes');
  let clock = T0;
  const silentSince = new Map<string, number>();
  const gone = new Set<string>();
  const asked = new Map<string, number>();
  const closed: string[] = [];
  const sweeperStore = composeSweeperStore(client, tableName);
  const faults = { laneRead: new Set<number>(), laneWrite: new Set<number>(), lanesQuery: false };
  // The real adapter; a lane's own item can be made to fail (a throttled read or write).
  const overrides: Partial<SweeperStore> = {
    heartbeatLane: (lane) =>
      faults.laneRead.has(lane)
        ? Promise.reject(new Error(`ProvisionedThroughputExceededException (lane ${lane})`))
        : sweeperStore.heartbeatLane(lane),
    heartbeatLanes: () =>
      faults.lanesQuery
        ? Promise.reject(new Error('ProvisionedThroughputExceededException (lanes)'))
        : sweeperStore.heartbeatLanes(),
    saveHeartbeatLane: (lane, state) =>
      faults.laneWrite.has(lane)
        ? Promise.reject(new Error(`ProvisionedThroughputExceededException (lane ${lane})`))
        : sweeperStore.saveHeartbeatLane(lane, state),
  };
  const failing = new Proxy(sweeperStore, {
    get: (target, property) => {
      const own = overrides[property as keyof SweeperStore];
      if (own) return own;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const handler = createSweeperHandler({
    ...NO_CAPABILITIES,
    // Runs of 5 s: one pass each (the pass period of a 30 s bound is 15 s).
    config: readConfig({
      [ENV.tableName]: tableName,
      [ENV.sweepInterval]: '5s',
      [ENV.heartbeatLanes]: String(LANES),
    }),
    store: failing,
    liveness: {
      check: async (id: string): Promise<LivenessAnswer> => {
        asked.set(id, (asked.get(id) ?? 0) + 1);
        if (gone.has(id)) return 'gone';
        return { alive: { lastActiveAt: silentSince.get(id) ?? clock, answeredAt: clock } };
      },
    },
    closeConnection: async (id: string) => {
      closed.push(id);
      gone.add(id);
    },
    ...sweeperRecordsInMemory(),
    now: () => clock,
  });
  const invoke = (lane: number) =>
    handler(lane === 0 ? {} : { heartbeatLane: lane }, lambdaContext('registrar-sweeper'));
  /** One schedule tick: the lanes one after another, each at the tick's time. */
  const round = async (at: number): Promise<PromiseSettledResult<SweeperSummary>[]> => {
    clock = at;
    const runs: PromiseSettledResult<SweeperSummary>[] = [];
    for (let lane = 0; lane < LANES; lane++) {
      runs.push(await invoke(lane).then(ok, failed));
    }
    return runs;
  };
  for (const g of [{ namespace: 'shop', name: 'big' }, ...SMALL_GROUPS]) {
    await store.applyGroup(group(g.namespace, g.name));
  }
  // The first tick sees the settings: they apply to holders connected from now on.
  await round(T0);
  const held: string[] = [];
  const connectAll = async (groupName: string, namespace: string, from: number, count: number) => {
    for (let i = from; i < from + count; i++) {
      await store.connect(vm(namespace, groupName, i, T0 + 1_000));
      held.push(`${groupName}-${i}`);
    }
  };
  await connectAll('big', 'shop', 0, options.big ?? BIG);
  for (const g of SMALL_GROUPS) await connectAll(g.name, g.namespace, 0, SMALL);
  return {
    store,
    held,
    asked,
    closed,
    silentSince,
    gone,
    faults,
    round,
    invoke,
    connectAll,
    setClock: (at: number) => {
      clock = at;
    },
    /** Ticks until every lane works from one plan that placed every group; returns the next tick. */
    warm: async (from: number): Promise<number> => {
      let at = from;
      for (let tick = 0; tick < 8; tick++, at += TICK) {
        const runs = await round(at);
        const versions = runs.map((run) => summaryOf(run).heartbeat?.planVersion);
        const checked = runs.map((run) => summaryOf(run).heartbeat?.checked ?? 0);
        if (new Set(versions).size === 1 && checked.every((n) => n > 0)) return at + TICK;
      }
      throw new Error('the lanes never settled on a plan that gives each a share');
    },
  };
}

/** The entry name of the big group's VM `i` (vm() below). */
function bigName(i: number): string {
  return `big-10-1-${Math.floor(i / 250)}-${(i % 250) + 1}`;
}

function ok(value: SweeperSummary): PromiseSettledResult<SweeperSummary> {
  return { status: 'fulfilled', value };
}
function failed(reason: unknown): PromiseSettledResult<SweeperSummary> {
  return { status: 'rejected', reason };
}
function summaryOf(run: PromiseSettledResult<SweeperSummary> | undefined): SweeperSummary {
  if (run?.status !== 'fulfilled') throw new Error(`the run failed: ${String(run?.reason)}`);
  return run.value;
}

describe('heartbeat lanes', () => {
  it('check every held entry exactly once a round, each lane its share, and close a silent VM in each share', async () => {
    const bed = await lanesBed();
    const at = await bed.warm(T0 + TICK);
    // Silent for longer than 10 s x 3: a VM at the start, middle and end of the big group
    // (three different lanes' ranges) and one of each small group.
    const silent = ['big-0', 'big-75', `big-${BIG - 1}`, 'cart-3', 'pay-3', 'front-3'];
    for (const id of silent) bed.silentSince.set(id, at - 40_000);
    bed.asked.clear();

    const runs = await bed.round(at);

    const summaries = runs.map(summaryOf);
    // Every held connection asked once, none twice, nothing else asked.
    expect([...bed.asked.keys()].sort()).toEqual([...bed.held].sort());
    expect([...bed.asked.values()].every((calls) => calls === 1)).toBe(true);
    // Each lane checked a share of its own, and they add up to the whole.
    const checked = summaries.map((s) => s.heartbeat?.checked ?? 0);
    expect(checked.every((n) => n > 0)).toBe(true);
    expect(checked.reduce((a, b) => a + b, 0)).toBe(bed.held.length);
    // The big group is cut: its three silent VMs were found by three different lanes.
    expect(summaries.map((s) => s.silentDropped).every((n) => n > 0)).toBe(true);
    expect(bed.closed.sort()).toEqual([...silent].sort());
  }, 120_000);

  it('moves the split points as the big group grows and shrinks, with every entry checked every round', async () => {
    const bed = await lanesBed({ big: 90 });
    let at = await bed.warm(T0 + TICK);
    const planOf = async () => {
      const record = await bed.store.heartbeatPlan();
      const plan = record?.next ?? record?.current;
      return { version: plan?.version ?? 0, cut: plan?.cut['shop/big'] };
    };
    const before = await planOf();
    // Growth: 210 more VMs in the big group (names after the first 90 and between them).
    await bed.connectAll('big', 'shop', 90, 210);
    const everyRound = async (rounds: number) => {
      const versions: number[] = [];
      for (let k = 0; k < rounds; k++, at += TICK) {
        bed.asked.clear();
        const runs = await bed.round(at);
        versions.push(summaryOf(runs[0]).heartbeat?.planVersion ?? -1);
        const held = bed.held.filter((id) => !bed.gone.has(id));
        // However the plan changes meanwhile, no held entry goes a round unchecked.
        expect(held.filter((id) => !bed.asked.has(id))).toEqual([]);
      }
      return versions;
    };
    await everyRound(4);
    const grown = await planOf();
    expect(grown.version).toBeGreaterThan(before.version);
    expect(grown.cut).toBeDefined();
    expect(grown.cut).not.toEqual(before.cut);

    // Shrinkage: every VM of the first two lanes' ranges leaves (API Gateway says they are
    // gone): the third lane's range is all that is left of the group.
    const upTo = grown.cut?.[1] ?? '';
    for (let i = 0; i < 300; i++) {
      if (bigName(i) <= upTo) bed.gone.add(`big-${i}`);
    }
    await everyRound(5);
    const shrunk = await planOf();
    expect(shrunk.version).toBeGreaterThan(grown.version);
    expect(shrunk.cut).not.toEqual(grown.cut);
  }, 240_000);

  it("delays only a failed lane's share: its invocation throws, its cursor write fails", async () => {
    const bed = await lanesBed();
    let at = await bed.warm(T0 + TICK);
    const silent = ['big-0', 'big-75', `big-${BIG - 1}`];
    for (const id of silent) bed.silentSince.set(id, at - 40_000);

    // Lane 1's own item cannot be read: its invocation fails and checks nothing.
    bed.faults.laneRead.add(1);
    const first = await bed.round(at);
    expect(first[1]?.status).toBe('rejected');
    expect(String((first[1] as PromiseRejectedResult).reason)).toMatch(/heartbeat lane 1/);
    expect(summaryOf(first[0]).silentDropped + summaryOf(first[2]).silentDropped).toBe(2);
    const waiting = silent.filter((id) => !bed.closed.includes(id));
    expect(waiting).toHaveLength(1);

    // Lane 1 reads again but cannot write its item: its checks still land, the run fails.
    bed.faults.laneRead.clear();
    bed.faults.laneWrite.add(1);
    at += TICK;
    const second = await bed.round(at);
    expect(second[1]?.status).toBe('rejected');
    expect(summaryOf(second[0]).failed + summaryOf(second[2]).failed).toBe(0);
    expect(bed.closed.sort()).toEqual([...silent].sort());

    // Recovered: every lane runs cleanly, every held entry checked once.
    bed.faults.laneWrite.clear();
    bed.asked.clear();
    const third = await bed.round(at + TICK);
    expect(third.every((run) => run.status === 'fulfilled')).toBe(true);
    const held = bed.held.filter((id) => !bed.gone.has(id));
    expect([...bed.asked.keys()].sort()).toEqual(held.sort());

    // Lane 0 cannot read the lanes' items: it skips its heartbeat share this tick rather
    // than take every lane's (no plan read, no pass), and the other lanes go on.
    bed.faults.lanesQuery = true;
    bed.asked.clear();
    bed.setClock(at + 2 * TICK);
    await expect(bed.invoke(0)).rejects.toThrow(/lanes/);
    expect(bed.asked.size).toBe(0);
    expect((await bed.invoke(1)).heartbeat?.checked).toBeGreaterThan(0);
  }, 120_000);

  it("names a lane that stopped running in lane 0's summary, and no lane while all run", async () => {
    const bed = await lanesBed({ big: 60 });
    let at = await bed.warm(T0 + TICK);
    expect(summaryOf((await bed.round(at))[0]).heartbeat?.staleLanes).toBeUndefined();
    // Lane 1's rule is gone: only lanes 0 and 2 run for three ticks.
    let last: SweeperSummary | undefined;
    for (let tick = 0; tick < 3; tick++) {
      at += TICK;
      bed.setClock(at);
      last = await bed.invoke(0);
      await bed.invoke(2);
    }
    expect(last?.heartbeat?.staleLanes).toEqual([1]);
  }, 120_000);

  it("runs one invocation of a lane at a time, and never takes the sweep's lease", async () => {
    const bed = await lanesBed({ big: 30 });
    const at = T0 + TICK;
    bed.setClock(at);
    // Another sweep run holds lane 0's lease.
    await bed.store.acquireSweepLease('sweep-elsewhere', at, at + 60_000);

    const [a, b] = await Promise.all([bed.invoke(2), bed.invoke(2)]);
    const lane1 = await bed.invoke(1);
    const sweep = await bed.invoke(0);

    expect([a.mode, b.mode].sort()).toEqual(['lane', 'skipped']);
    expect(lane1.mode).toBe('lane');
    expect(sweep.mode).toBe('skipped');
    // Lane 0's lease is still the other run's: no lane took or released it.
    const again = await bed.store.acquireSweepLease('sweep-here', at + 1, at + 2);
    expect(again).toEqual({ acquired: false, holder: 'sweep-elsewhere', until: at + 60_000 });
  }, 60_000);

  it('refuses an event naming a lane the stack does not run, with the field and the value', async () => {
    const bed = await lanesBed({ big: 1 });
    await expect(bed.invoke(3)).rejects.toThrow(
      "invalid sweeper event: heartbeatLane (value '3') must be a whole number from 1 to 2",
    );
  }, 60_000);
});
