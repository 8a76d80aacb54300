import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { captureCli } from '../fixtures/cli-run.ts';
import { startTenantRuntime, type TenantRuntime, until } from '../fixtures/tenant-runtime.ts';
import type { TestClient } from '../fixtures/websocket-client.ts';

/**
 * Fail static per tenant, as an adversary would try it: namespace `evil` holds a join token
 * for itself only, registers 30 fake VMs claiming the zone of `shop`'s VMs (then every zone)
 * and drops them without a close frame. A crashed `shop` VM in that zone must still be removed
 * within the grace period and 3 sweeps, as without the attack, and the other `shop` VMs stay.
 * Real WebSocket clients against the local runtime, the real sweeper (run when the test says)
 * and the operator's CLI.
 */

const GRACE_MS = 300;
const ZONE_A = 'eu-west-1/eu-west-1a';
const ZONES = [ZONE_A, 'eu-west-1/eu-west-1b', 'eu-west-1/eu-west-1c'];

let tenants: TenantRuntime;

beforeAll(async () => {
  tenants = await startTenantRuntime(
    { shop: ['web'], evil: ['fake'] },
    { gracePeriodMs: GRACE_MS },
  );
});

afterAll(async () => {
  await tenants?.close();
});

function connect(namespace: string, name: string, ip: string, zone: string): Promise<TestClient> {
  return tenants.connect(namespace, name, ip, `&locality=${zone}/rack-1`);
}

/** Drops connections as a crash would: no close frame, so API Gateway reports 1006. */
async function crash(clients: TestClient[]) {
  for (const client of clients) client.socket.terminate();
  await Promise.all(clients.map((client) => client.closed));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const entry = (namespace: string, name: string) => tenants.store.getEntry({ namespace, name });
const disconnected = (namespace: string, name: string) =>
  until(async () => (await entry(namespace, name))?.connection?.disconnectedAt);

/**
 * Sweeps after the grace period of the last departure, as the scheduled sweeper would, until
 * the entry is gone; returns how many sweeps that took (at most `limit`).
 */
async function sweepsUntilGone(namespace: string, name: string, limit: number) {
  await sleep(GRACE_MS + 50);
  for (let run = 1; run <= limit; run++) {
    await tenants.runtime.sweepNow();
    if ((await entry(namespace, name)) === undefined) return run;
  }
  return Number.POSITIVE_INFINITY;
}

async function scenario(subnet: number, fakeZones: readonly string[]) {
  const shopIps = Array.from({ length: 4 }, (_, i) => `10.${subnet}.1.${i + 1}`);
  const shop = await Promise.all(shopIps.map((ip) => connect('shop', 'web', ip, ZONE_A)));
  const fakeIps = Array.from({ length: 30 }, (_, i) => `10.${subnet}.2.${i + 1}`);
  const fakes = await Promise.all(
    fakeIps.map((ip, i) => connect('evil', 'fake', ip, fakeZones[i % fakeZones.length] ?? ZONE_A)),
  );
  // A sweep sees the fleet whole first: the populations the shares are taken against.
  await tenants.runtime.sweepNow();

  await crash(fakes);
  for (const ip of fakeIps) await disconnected('evil', `fake-${ip}`);
  const crashedIp = shopIps[0] ?? '';
  const crashedName = `web-${crashedIp}`;
  await crash(shop.slice(0, 1));
  await disconnected('shop', crashedName);
  return { shop, shopIps, fakeIps, crashedName };
}

describe('fail static per tenant: one namespace cannot delay another', () => {
  it("removes a crashed shop VM within grace + 3 sweeps while evil's 30 fakes in its zone are slowed", async () => {
    const { shop, shopIps, fakeIps, crashedName } = await scenario(1, [ZONE_A]);

    expect(await sweepsUntilGone('shop', crashedName, 3)).toBeLessThanOrEqual(3);
    // The other shop VMs stay, connected.
    for (const ip of shopIps.slice(1)) {
      const stayed = await entry('shop', `web-${ip}`);
      expect(stayed?.connection?.connectedAt).toBeDefined();
    }
    // evil's own cell is what slowed down: most of its fakes are still there.
    const left = await Promise.all(fakeIps.map((ip) => entry('evil', `fake-${ip}`)));
    expect(left.filter(Boolean).length).toBeGreaterThan(20);

    const status = await captureCli(['sweep', 'status'], {
      env: {
        REGISTRAR_DYNAMODB_ENDPOINT: tenants.runtime.dynamoDbEndpoint,
        REGISTRAR_TABLE: tenants.runtime.tableName,
      },
    });
    // One word per cell, and the fleet's is the cells' (issue 35: it said normal here).
    expect(status.stdout).toMatch(/^mode: {4}SLOWED: .* in the 1 slowed cell below; /m);
    expect(status.stdout).toMatch(
      /^evil\s+eu-west-1\/eu-west-1a\s+0\s+\d+\s+0\s+(9\d|100)%\s+slowed\s+\d{4}-\S+Z$/m,
    );
    expect(status.stdout).toMatch(/^shop\s+eu-west-1\/eu-west-1a\s+3\s+0\s+0\s+0%\s+normal$/m);
    await Promise.all(shop.slice(1).map((client) => client.close(1000, 'test over')));
  }, 60_000);

  it('does not hold shop when evil claims and drops every zone', async () => {
    const { shop, crashedName } = await scenario(2, ZONES);

    expect(await sweepsUntilGone('shop', crashedName, 3)).toBeLessThanOrEqual(3);
    const summary = await tenants.runtime.sweepNow();
    expect(summary.mode).not.toBe('held');
    await Promise.all(shop.slice(1).map((client) => client.close(1000, 'test over')));
  }, 60_000);
});
