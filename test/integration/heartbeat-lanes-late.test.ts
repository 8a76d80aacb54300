import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSweeperHandler,
  type SweeperEvent,
  type SweeperSummary,
} from '../../functions/sweeper.ts';
import { ENV, readConfig } from '../../lib/config.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import type { LivenessAnswer } from '../../lib/registration/liveness.ts';
import { sweeperStore as composeSweeperStore } from '../../lib/wiring/sweeper-store.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { heartbeatGroup, vmConnect } from '../fixtures/heartbeat-fleet.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * Heartbeat lanes (issue 44, item 4) through the deployed sweeper handler over dynalite: a
 * lane delivered more than half an interval late, and lanes raised from 1 to 3 while the
 * groups grow. Each round is one schedule tick; GetConnection is a stand-in that notes each
 * connection asked. The rule: whatever the plan does meanwhile, every held entry is checked
 * in every round (its bound, 10 s x 3, allows no round of 5 s to be skipped twice in a row;
 * here not once).
 */
const T0 = Date.UTC(2026, 10, 28, 12);
const TICK = 5_000;
const TEN_BY_THREE = { intervalMs: 10_000, misses: 3 };

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

function group(namespace: string, name: string): WorkloadGroup {
  return heartbeatGroup(namespace, name, TEN_BY_THREE);
}

function vm(namespace: string, name: string, i: number, at: number): ConnectChange {
  const ip = `10.${namespace === 'shop' ? 7 : 8}.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  const connectionId = `${name}-${i}`;
  return vmConnect({
    namespace,
    group: name,
    ip,
    at,
    connectionId,
    agentVersion: '0.3.0',
    told: TEN_BY_THREE,
  });
}

async function bed() {
  const { client, tableName, store } = await freshRegistry(dynamo.endpoint, 'late');
  let clock = T0;
  const asked = new Map<string, number>();
  const sweeperStore = composeSweeperStore(client, tableName);
  const handlerFor = (lanes: number) =>
    createSweeperHandler({
      ...NO_CAPABILITIES,
      config: readConfig({
        [ENV.tableName]: tableName,
        [ENV.sweepInterval]: `${TICK}ms`,
        [ENV.heartbeatLanes]: String(lanes),
      }),
      store: sweeperStore,
      liveness: {
        check: async (id: string): Promise<LivenessAnswer> => {
          asked.set(id, (asked.get(id) ?? 0) + 1);
          return { alive: { lastActiveAt: clock, answeredAt: clock } };
        },
      },
      ...sweeperRecordsInMemory(),
      now: () => clock,
    });
  let lanes = 1;
  let handler = handlerFor(lanes);
  /** One lane's run of the tick `tick`, its invocation starting at `startAt`. */
  const invoke = async (lane: number, tick: number, startAt = tick): Promise<SweeperSummary> => {
    clock = startAt;
    const time = new Date(tick).toISOString();
    return handler(
      // Lane 0's is the schedule's own event; only its time is read.
      lane === 0 ? ({ time } as unknown as SweeperEvent) : { heartbeatLane: lane, time },
      lambdaContext('registrar-sweeper'),
    );
  };
  const held: string[] = [];
  const connect = async (namespace: string, name: string, from: number, count: number) => {
    for (let i = from; i < from + count; i++) {
      await store.connect(vm(namespace, name, i, T0 - 1_000));
      held.push(`${name}-${i}`);
    }
  };
  await store.applyGroup(group('shop', 'big'));
  await store.applyGroup(group('web', 'front'));
  await connect('shop', 'big', 0, 150);
  await connect('web', 'front', 0, 20);
  return {
    store,
    asked,
    held,
    connect,
    invoke,
    lanes: () => lanes,
    setLanes: (n: number) => {
      lanes = n;
      handler = handlerFor(n);
    },
    /** A whole tick: every lane on time, unless `late` names a lane and its start. */
    round: async (tick: number, late?: { lane: number; startAt: number }) => {
      asked.clear();
      const summaries: SweeperSummary[] = [];
      for (let lane = 0; lane < lanes; lane++) {
        const startAt = late?.lane === lane ? late.startAt : tick;
        summaries.push(await invoke(lane, tick, startAt));
      }
      return summaries;
    },
  };
}

describe('heartbeat lanes and their plan', () => {
  it('raised from 1 to 3 under a growing fleet: no held entry goes a round unchecked, and none is checked twice', async () => {
    const b = await bed();
    let tick = T0;
    for (let k = 0; k < 3; k++, tick += TICK) await b.round(tick);
    b.setLanes(3);
    const checkedTwice: string[] = [];
    for (let k = 0; k < 10; k++, tick += TICK) {
      // More VMs come as the lanes are raised (load that moves the split points).
      if (k === 2) await b.connect('shop', 'big', 150, 150);
      const summaries = await b.round(tick);
      expect(summaries.every((s) => s.failed === 0)).toBe(true);
      expect(b.held.filter((id) => !b.asked.has(id))).toEqual([]);
      checkedTwice.push(...[...b.asked].filter(([, n]) => n > 1).map(([id]) => id));
    }
    expect(checkedTwice).toEqual([]);
    // The lanes do share the work in the end: each checks part of it.
    const last = await b.round(tick);
    expect(last.map((s) => s.heartbeat?.checked ?? 0).every((n) => n > 0)).toBe(true);
  }, 180_000);

  it("a lane delivered more than half an interval late works from its tick's plan: every entry checked once that round", async () => {
    const b = await bed();
    b.setLanes(3);
    let tick = T0;
    for (let k = 0; k < 6; k++, tick += TICK) await b.round(tick);
    // Growth makes lane 0 publish a new plan, effective half an interval after its tick.
    await b.connect('shop', 'big', 150, 200);
    let published = 0;
    for (let k = 0; k < 8 && published < 2; k++, tick += TICK) {
      const before = (await b.store.heartbeatPlan())?.next?.version;
      // Lane 2 starts 0.6 of an interval late, after the new plan's `from`.
      const summaries = await b.round(tick, { lane: 2, startAt: tick + 0.6 * TICK });
      const after = await b.store.heartbeatPlan();
      if (after?.next && after.next.version !== before && after.next.from > tick) published += 1;
      expect(b.held.filter((id) => !b.asked.has(id))).toEqual([]);
      expect([...b.asked.values()].every((n) => n === 1)).toBe(true);
      // The late lane worked from the plan its tick's other lanes used.
      expect(new Set(summaries.map((s) => s.heartbeat?.planVersion)).size).toBe(1);
    }
    expect(published).toBeGreaterThan(0);
  }, 180_000);
});
