import { afterEach, describe, expect, it } from 'vitest';

import { ENV } from '../../lib/config.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { type FaultProxy, startFaultProxy } from '../fixtures/fault-proxy.ts';
import { startTenantRuntime, type TenantRuntime, until } from '../fixtures/tenant-runtime.ts';
import type { TestClient } from '../fixtures/websocket-client.ts';

/**
 * The fair sweeper through the local runtime, as an adversary would try it: namespace `evil`
 * holds a join token for itself only and makes a backlog of departures far over one sweeper
 * run's budget (5 deletions here, REGISTRAR_SWEEP_MAX_DELETES); a VM of `shop` crashes. Real
 * WebSocket clients, the real handlers and sweeper. Before the fair sweeper, evil's backlog was
 * read first and shop's VM waited for all of it; now it leaves in the first run after its grace
 * period, as it would without evil.
 */
const GRACE_MS = 300;
const ZONE = 'eu-west-1/eu-west-1a';
const BUDGET = 5;

let tenants: TenantRuntime | undefined;
let dynamo: TestDynamo | undefined;
let proxy: FaultProxy | undefined;
afterEach(async () => {
  await tenants?.close();
  await proxy?.close();
  await dynamo?.close();
  tenants = undefined;
  proxy = undefined;
  dynamo = undefined;
});

async function start(options: Parameters<typeof startTenantRuntime>[1] = {}) {
  tenants = await startTenantRuntime(
    { shop: ['web'], evil: ['fake'] },
    {
      gracePeriodMs: GRACE_MS,
      ...options,
      functionEnv: { [ENV.sweepMaxDeletes]: String(BUDGET), ...options.functionEnv },
    },
  );
  return tenants;
}

function fleet(
  runtime: TenantRuntime,
  namespace: string,
  group: string,
  count: number,
  subnet: number,
  zones: readonly string[] = [ZONE],
): Promise<TestClient[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      runtime.connect(
        namespace,
        group,
        `10.${subnet}.${Math.floor(i / 250)}.${(i % 250) + 1}`,
        `&locality=${zones[i % zones.length]}/rack-1`,
      ),
    ),
  );
}

/** Drops connections as a crash would: no close frame, so the gateway reports 1006. */
async function crash(clients: TestClient[]) {
  for (const client of clients) client.socket.terminate();
  await Promise.all(clients.map((client) => client.closed));
}

async function entries(runtime: TenantRuntime, namespace: string) {
  return runtime.store.listEntries(namespace);
}

async function allDisconnected(runtime: TenantRuntime, namespace: string, count: number) {
  await until(async () => {
    const list = await entries(runtime, namespace);
    const away = list.filter((record) => record.connection?.disconnectedAt !== undefined);
    return away.length >= count;
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * shop's first VM crashes; once its grace period is over, one sweep runs, as the scheduled one
 * would: what it did, and which of shop's VMs are left (by address).
 */
async function crashShopVmAndSweep(runtime: TenantRuntime, shop: TestClient[]) {
  await crash(shop.slice(0, 1));
  await allDisconnected(runtime, 'shop', 1);
  await sleep(GRACE_MS + 50);
  const run = await runtime.runtime.sweepNow();
  const left = (await entries(runtime, 'shop')).map((record) => record.entry.spec.address);
  return { run, left: left.sort() };
}

describe('a fair sweeper under a hostile backlog (local runtime, real agents)', () => {
  it("removes shop's crashed VM in the first run after its grace while evil's clean departures are eight runs deep", async () => {
    const runtime = await start();
    const shop = await fleet(runtime, 'shop', 'web', 3, 1);
    const evil = await fleet(runtime, 'evil', 'fake', 8 * BUDGET, 2);
    await Promise.all(evil.map((client) => client.close(1000, 'bye')));
    await allDisconnected(runtime, 'evil', evil.length);

    const { run, left } = await crashShopVmAndSweep(runtime, shop);

    expect(left).toEqual(['10.1.0.2', '10.1.0.3']);
    expect(run.deleted).toBe(BUDGET);
    // evil's backlog is still there, minus its share of the run.
    expect((await entries(runtime, 'evil')).length).toBe(8 * BUDGET - (BUDGET - 1));
    await Promise.all(shop.slice(1).map((client) => client.close(1000, 'test over')));
  }, 120_000);

  it("removes shop's crashed VM in the first run after its grace while evil's abnormal departures sit in slowed cells of zones it invented", async () => {
    const runtime = await start();
    const shop = await fleet(runtime, 'shop', 'web', 3, 1);
    const invented = ['mars-1/mars-1a', 'mars-1/mars-1b', 'mars-1/mars-1c'];
    const evil = await fleet(runtime, 'evil', 'fake', 12 * BUDGET, 3, invented);
    // A sweep sees the fleet whole first: the populations the cells' shares are taken of.
    await runtime.runtime.sweepNow();
    await crash(evil);
    await allDisconnected(runtime, 'evil', evil.length);

    const { run, left } = await crashShopVmAndSweep(runtime, shop);

    expect(left).toEqual(['10.1.0.2', '10.1.0.3']);
    // evil's cells are slowed: its deletions go at the secondary rate, its skips in its turns.
    expect(run.slowed).toBeGreaterThan(0);
    expect((await entries(runtime, 'evil')).length).toBeGreaterThan(12 * BUDGET - BUDGET);
    await Promise.all(shop.slice(1).map((client) => client.close(1000, 'test over')));
  }, 120_000);

  it("removes shop's VM whose $disconnect was lost while evil's clean backlog lasts twenty runs, its liveness found by the checks", async () => {
    // The registry behind a proxy that can fail writes: shop's $disconnect write fails (the
    // SDK's three attempts), so its $disconnect is lost; the sweeper runs on its own schedule
    // (every second) and its liveness checks (every second) must find the VM gone.
    dynamo = await startTestDynamo();
    proxy = await startFaultProxy(dynamo.endpoint, 7);
    const runtime = await start({
      dynamoDbEndpoint: proxy.endpoint,
      sweepIntervalMs: 1_000,
      livenessIntervalMs: 1_000,
      maxConnectionAgeMs: 120_000,
      connectSettleMs: 100,
      gracePeriodMs: 1_000,
      functionEnv: { [ENV.sweepMaxDeletes]: '3', [ENV.sweepDeletesPerSecond]: '5' },
    });
    const shop = await fleet(runtime, 'shop', 'web', 2, 1);
    const evil = await fleet(runtime, 'evil', 'fake', 60, 2);
    await Promise.all(evil.map((client) => client.close(1000, 'bye')));
    await allDisconnected(runtime, 'evil', evil.length);
    const lost = (await entries(runtime, 'shop')).find(
      (record) => record.entry.spec.address === '10.1.0.1',
    );
    const lostName = lost?.entry.metadata.name ?? '';
    const gate = proxy;
    gate.plan = {
      rate: 1,
      when: 'before',
      kind: 'throttle',
      match: (operation, body) => operation === 'UpdateItem' && body.includes(`WE#${lostName}`),
    };
    await crash(shop.slice(0, 1));
    await until(async () => gate.counts.failedBefore >= 3);
    // The $disconnect is lost: the entry still looks connected. Every write of the entry fails
    // until this is read, or a liveness check of a busy machine could land first.
    const after = await runtime.store.getEntry({ namespace: 'shop', name: lostName });
    expect(after?.connection?.connectedAt).toBeDefined();
    gate.plan = { rate: 0, when: 'before', kind: 'internal' };

    await until(
      async () =>
        (await runtime.store.getEntry({ namespace: 'shop', name: lostName })) === undefined,
      30_000,
    );

    // 3 deletions a run take 20 runs for evil's 60: shop's VM did not wait for them.
    expect((await entries(runtime, 'evil')).length).toBeGreaterThanOrEqual(30);
    // The other shop VM stays.
    expect((await entries(runtime, 'shop')).length).toBe(1);
    await shop[1]?.close(1000, 'test over');
  }, 120_000);
});
