import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { type OutageProxy, startOutageProxy } from '../fixtures/outage-proxy.ts';
import { openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * Fail static through the local runtime, as it would go on AWS: real WebSocket clients behind a
 * proxy that can fail like API Gateway (every connection cut without a close frame, no
 * reconnect possible), the real handlers and sweeper, and the operator's CLI. The sweeper runs
 * when the test says (`sweepNow`); waits are real but only for the grace period, which is short.
 */

const GRACE_MS = 400;
const ZONES = ['eu-west-1/eu-west-1a', 'eu-west-1/eu-west-1b'];

const webGroup: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { template: { ports: { http: 8080 }, serviceAccount: 'web' } },
};

interface Harness {
  runtime: LocalRuntime;
  proxy: OutageProxy;
  store: RegistrarStore;
  token: string;
  connect(ip: string, zone: string, instanceId?: string): Promise<TestClient>;
  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

async function harness(functionEnv: Record<string, string> = {}): Promise<Harness> {
  const runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    tableName: `registry-${randomUUID()}`,
    gracePeriodMs: GRACE_MS,
    // The timer's own runs stay out of the way: the test runs the sweeper.
    sweepIntervalMs: 3_600_000,
    logLevel: 'SILENT',
    functionEnv,
  });
  const proxy = await startOutageProxy(runtime.url);
  const client = createDocumentClient({
    region: runtime.region,
    endpoint: runtime.dynamoDbEndpoint,
  });
  const store = composeRegistry(client, runtime.tableName);
  await store.applyGroup(webGroup);
  const { token, stored } = createJoinToken({
    namespace: 'shop',
    serviceAccount: 'web',
    ttlMs: 3_600_000,
    now: Date.now(),
  });
  await new DynamoDbTokenStore(client, runtime.tableName).putToken(stored);
  return {
    runtime,
    proxy,
    store,
    token,
    connect: (ip, zone, instanceId) => {
      const label = instanceId
        ? `&label=${encodeURIComponent(`registrar.io/instance-id=${instanceId}`)}`
        : '';
      return openClient(
        `${proxy.url}/?group=web&namespace=shop&ip=${ip}&locality=${zone}/rack-1${label}`,
        { Authorization: `Bearer ${token}` },
      );
    },
    cli: (args) =>
      captureCli(args, {
        env: {
          REGISTRAR_DYNAMODB_ENDPOINT: runtime.dynamoDbEndpoint,
          REGISTRAR_TABLE: runtime.tableName,
        },
      }),
    close: async () => {
      await proxy.close();
      await runtime.close();
    },
  };
}

const ref = (ip: string) => ({ namespace: 'shop', name: `web-${ip}` });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function fleet(h: Harness, subnet: number, count: number, instance = false) {
  const ips = Array.from({ length: count }, (_, i) => `10.${subnet}.0.${i + 1}`);
  const clients = await Promise.all(
    ips.map((ip, i) =>
      h.connect(
        ip,
        ZONES[i % ZONES.length] ?? '',
        instance ? `i-${String(subnet).padStart(2, '0')}${String(i).padStart(15, '0')}` : undefined,
      ),
    ),
  );
  return { ips, clients };
}

async function disconnectedAll(h: Harness, ips: string[]) {
  for (const ip of ips) {
    await until(async () => (await h.store.getEntry(ref(ip)))?.connection?.disconnectedAt);
  }
}

async function until<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(20);
  }
}

async function count(h: Harness, ips: string[]) {
  const entries = await Promise.all(ips.map((ip) => h.store.getEntry(ref(ip))));
  return entries.filter((entry) => entry !== undefined).length;
}

describe('a simulated API Gateway outage', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('deletes nothing while every connection is down, shows the hold, and all reconnect', async () => {
    const { ips, clients } = await fleet(h, 1, 10);

    h.proxy.outage();
    await Promise.all(clients.map((client) => client.closed));
    await disconnectedAll(h, ips);
    const entry = await h.store.getEntry(ref(ips[0] ?? ''));
    expect(entry?.connection?.departure).toBe('abnormal');

    // No reconnect possible for 3 x the grace period; the sweeper runs all along.
    const runs = [];
    for (let i = 0; i < 3; i++) {
      await sleep(GRACE_MS);
      runs.push(await h.runtime.sweepNow());
    }
    expect(runs.map((run) => run.deleted)).toEqual([0, 0, 0]);
    expect(runs.at(-1)).toMatchObject({ mode: 'held', held: 10 });
    expect(await count(h, ips)).toBe(10);

    const status = await h.cli(['sweep', 'status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^mode: {4}HELD/m);
    expect(status.stdout).toMatch(
      /^why: {5}more than 55% of the entries of every namespace in every zone went away abnormally/m,
    );
    expect(status.stdout).toMatch(/^holding: 10 entries away .* in every namespace$/m);
    expect(status.stdout).toMatch(/^until: {3}\d{4}-.*the hold bound/m);
    expect(status.stdout).toMatch(
      /^\S+\s+eu-west-1\/eu-west-1a\s+0\s+5\s+0\s+100%\s+held\s+\d{4}-\S+Z$/m,
    );

    // A manual sweep respects the hold too.
    const manual = await h.cli(['sweep']);
    expect(manual.stdout).toMatch(/^0 deleted; .*10 held/);

    h.proxy.restore();
    const back = await Promise.all(ips.map((ip, i) => h.connect(ip, ZONES[i % 2] ?? '')));
    for (const ip of ips) {
      expect((await h.store.getEntry(ref(ip)))?.connection?.connectedAt).toEqual(
        expect.any(Number),
      );
    }
    expect(await h.runtime.sweepNow()).toMatchObject({ mode: 'normal', deleted: 0, held: 0 });
    expect((await h.cli(['sweep', 'status'])).stdout).toMatch(/^mode: {4}normal/m);
    await Promise.all(back.map((client) => client.close(1000, 'agent closing')));
  }, 30_000);
});

describe('deliberate departures during a hold', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('removes 10 VMs that stop cleanly after the grace period, and a terminated instance at once, while the rest is held', async () => {
    // The clean leavers count in the cell's population until swept: 30 dropped of 40 is an
    // outage (30 of 40 > 55%); 10 dropped after 30 stopped would be a quarter, no hold.
    const stopping = await fleet(h, 2, 10);
    const dropped = await fleet(h, 3, 30, true);

    await Promise.all(stopping.clients.map((client) => client.close(1000, 'agent closing')));
    await disconnectedAll(h, stopping.ips);
    h.proxy.outage();
    await disconnectedAll(h, dropped.ips);

    await sleep(GRACE_MS);
    const run = await h.runtime.sweepNow();
    expect(run).toMatchObject({ mode: 'held', deleted: 10, held: 30 });
    expect(await count(h, stopping.ips)).toBe(0);
    expect(await count(h, dropped.ips)).toBe(30);

    // EC2 says one of the dropped VMs is terminated: its entry goes now, hold or not.
    const terminated = `i-03${'0'.repeat(15)}`;
    const event = await h.cli(['ec2-event', '--instance-id', terminated, '--state', 'terminated']);
    expect(event.code).toBe(0);
    expect(event.stdout).toBe(
      `workloadentry "shop/web-10.3.0.1" removed\ninstance ${terminated} terminated: 1 removed\n`,
    );
    expect(await count(h, dropped.ips)).toBe(29);
    // Stopping is not in the default states: an instance that stops may start again.
    const stopped = await h.cli([
      'ec2-event',
      '--instance-id',
      `i-03${'0'.repeat(14)}1`,
      '--state',
      'stopped',
    ]);
    expect(stopped.stdout).toMatch(/is not one that removes entries/);
    expect(await count(h, dropped.ips)).toBe(29);
  }, 30_000);
});

describe('the hold bound', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness({ REGISTRAR_SWEEP_HOLD_BOUND: '1500ms' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('resumes deletions at the normal pace once a hold outlived its bound, alarm kept', async () => {
    const { ips } = await fleet(h, 4, 6);
    h.proxy.outage();
    await disconnectedAll(h, ips);
    await sleep(GRACE_MS);
    const held = await h.runtime.sweepNow();
    expect(held).toMatchObject({ mode: 'held', deleted: 0 });

    await sleep(1500);
    const resumed = await h.runtime.sweepNow();
    expect(resumed).toMatchObject({ mode: 'hold-expired', deleted: 6 });
    expect((await h.cli(['sweep', 'status'])).stdout).toMatch(/^mode: {4}HOLD EXPIRED/m);
  }, 30_000);
});

describe('drain', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const healthy = async (ip: string) => {
    const record = await h.store.getEntry(ref(ip));
    return record?.health;
  };

  it('turns the entry Healthy False / Draining, idempotently, and ignores later health reports', async () => {
    const agent = await h.connect('10.5.0.1', ZONES[0] ?? '');
    expect(await agent.request({ action: 'health', healthy: true })).toEqual({
      action: 'health',
      ok: true,
    });

    expect(await agent.request({ action: 'drain' })).toEqual({ action: 'drain', ok: true });
    const drained = await healthy('10.5.0.1');
    expect(drained).toMatchObject({ status: 'False', reason: 'Draining' });

    expect(await agent.request({ action: 'drain' })).toEqual({ action: 'drain', ok: true });
    expect(await healthy('10.5.0.1')).toEqual(drained);

    // A report sent before the drain and processed after it does not undo it.
    expect(await agent.request({ action: 'health', healthy: true })).toEqual({
      action: 'health',
      ok: true,
    });
    expect(await healthy('10.5.0.1')).toMatchObject({ status: 'False', reason: 'Draining' });

    await agent.close(1000, 'agent closing');
    const record = await until(async () => {
      const current = await h.store.getEntry(ref('10.5.0.1'));
      return current?.connection?.disconnectedAt ? current : undefined;
    });
    expect(record.connection?.departure).toBe('clean');
  });

  it('is cancelled by a new connect: the next health report decides again', async () => {
    const agent = await h.connect('10.5.0.2', ZONES[0] ?? '');
    await agent.request({ action: 'drain' });
    const again = await h.connect('10.5.0.2', ZONES[0] ?? '');

    expect((await healthy('10.5.0.2'))?.reason).toBeUndefined();
    expect(await again.request({ action: 'health', healthy: true })).toEqual({
      action: 'health',
      ok: true,
    });
    expect(await healthy('10.5.0.2')).toMatchObject({ status: 'True' });
    await Promise.all([agent.close(), again.close()]);
  });

  it('refuses a drain from a connection that holds nothing, and a malformed one', async () => {
    const agent = await h.connect('10.5.0.3', ZONES[0] ?? '');
    expect(await agent.request({ action: 'drain', now: true })).toMatchObject({
      ok: false,
      error: { code: 'InvalidMessage' },
    });
    await h.store.deleteEntry(ref('10.5.0.3'));
    expect(await agent.request({ action: 'drain' })).toMatchObject({
      ok: false,
      error: { code: 'NotRegistered' },
    });
    await agent.close();
  });
});
