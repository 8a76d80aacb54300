import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Heartbeat } from '../../lib/domain/heartbeat.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import type { LivenessAnswer } from '../../lib/registration/liveness.ts';
import { runSweep } from '../../lib/registration/sweep.ts';
import { DynamoDbNamespaceSettings } from '../../lib/store/dynamodb-namespace-settings.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { heartbeatGroup, vmConnect } from '../fixtures/heartbeat-fleet.ts';

/**
 * Issue 44, "one tenant sets everyone's pace and bill", over real storage and the sweeper's
 * own passes on a simulated clock (each check answered by a GetConnection stand-in that
 * notes which connection was asked, and when in the run): namespace `shop` has 40 VMs in a
 * `60s x 3` group; then namespace `evil` adds one VM in a `5s x 2` group. Before, a run's
 * passes came every 5 s for every group, and shop's 40 VMs were checked 12 times a run (480
 * checks instead of 40). Now shop's checks, their number and their times, are the same with
 * or without evil, and evil's VM is checked at its own pace.
 */
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 28, 12);
const SHOP_VMS = 40;
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

function group(namespace: string, name: string, heartbeat: Heartbeat): WorkloadGroup {
  return heartbeatGroup(namespace, name, heartbeat);
}

function vm(namespace: string, name: string, ip: string, told: Heartbeat): ConnectChange {
  const connectionId = `${namespace}-${ip}`;
  return vmConnect({
    namespace,
    group: name,
    ip,
    at: T0 - MINUTE,
    connectionId,
    agentVersion: '0.3.0',
    told,
  });
}

/** One scheduled run of the sweeper's passes, its clock simulated: who was checked when. */
async function oneRun(store: RegistrarStore, at: number) {
  let elapsed = 0;
  const checks: { namespace: string; at: number }[] = [];
  const result = await runSweep(store, {
    now: at,
    policy,
    maxDeletes: 100,
    deletesPerSecond: 100,
    repeatHeartbeatPasses: true,
    elapsedMs: () => elapsed,
    sleep: async (ms) => {
      elapsed += ms;
    },
    liveness: {
      check: async (id: string): Promise<LivenessAnswer> => {
        checks.push({ namespace: id.slice(0, id.indexOf('-')), at: elapsed });
        // Every VM pings: a second ago, by API Gateway's clock.
        return { alive: { lastActiveAt: at + elapsed - 1_000, answeredAt: at + elapsed } };
      },
    },
  });
  const of = (namespace: string) => checks.filter((c) => c.namespace === namespace);
  return { result, of };
}

describe("one namespace's short heartbeat", () => {
  it("changes neither the number nor the times of another namespace's checks", async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'pace');
    const slow = { intervalMs: 60_000, misses: 3 };
    const fast = { intervalMs: 5_000, misses: 2 };
    await store.applyGroup(group('shop', 'web', slow));
    for (let i = 1; i <= SHOP_VMS; i++) await store.connect(vm('shop', 'web', `10.0.0.${i}`, slow));

    const alone = await oneRun(store, T0);

    await store.applyGroup(group('evil', 'spam', fast));
    await store.connect(vm('evil', 'spam', '10.66.0.1', fast));
    const beside = await oneRun(store, T0 + MINUTE);

    // shop: its 40 VMs once a run (60 s x 3: half its bound is past the one-minute run).
    expect(alone.of('shop')).toHaveLength(SHOP_VMS);
    expect(beside.of('shop')).toHaveLength(SHOP_VMS);
    expect(beside.of('shop').map((c) => c.at)).toEqual(alone.of('shop').map((c) => c.at));
    expect(new Set(beside.of('shop').map((c) => c.at))).toEqual(new Set([0]));
    // evil: its VM every 5 s (half of 10 s) through the run: 12 checks.
    expect(beside.of('evil').map((c) => c.at)).toEqual(
      Array.from({ length: 12 }, (_, i) => i * 5_000),
    );
    // The run's report says each tenant's share, as the sweeper's log line does.
    expect(beside.result.heartbeat?.checkedByNamespace).toEqual({ shop: SHOP_VMS, evil: 12 });
    expect(beside.result.silentDropped).toBe(0);
  }, 120_000);

  it("is slowed to its namespace's quota, and no other namespace is", async () => {
    const { store, client, tableName } = await freshRegistry(dynamo.endpoint, 'quota');
    const slow = { intervalMs: 60_000, misses: 3 };
    const fast = { intervalMs: 5_000, misses: 2 };
    await store.applyGroup(group('shop', 'web', slow));
    await store.applyGroup(group('evil', 'spam', fast));
    for (let i = 1; i <= 4; i++) await store.connect(vm('shop', 'web', `10.0.0.${i}`, slow));
    for (let i = 1; i <= 10; i++) await store.connect(vm('evil', 'spam', `10.66.0.${i}`, fast));
    // 10 VMs x 12 = 120 checks a minute asked; the operator allows evil 30.
    await new DynamoDbNamespaceSettings(client, tableName).updateSettings(
      'evil',
      { set: { heartbeatChecks: 30 }, unset: [] },
      T0,
    );

    // The first run learns how many VMs each group holds; from the next, evil is paced by it.
    const first = await oneRun(store, T0);
    const second = await oneRun(store, T0 + MINUTE);

    expect(first.of('evil')).toHaveLength(120);
    // 120 / 30 = 4 times slower: every 20 s instead of 5 s, 30 checks a run.
    expect(second.of('evil')).toHaveLength(30);
    expect([...new Set(second.of('evil').map((c) => c.at))]).toEqual([0, 20_000, 40_000]);
    expect(second.result.heartbeat?.overQuota).toEqual({
      evil: { demand: 120, quota: 30, stretch: 4 },
    });
    // shop: as before, once a run.
    expect(second.of('shop').map((c) => c.at)).toEqual([0, 0, 0, 0]);
  }, 120_000);
});
