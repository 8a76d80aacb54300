import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { runSweep, type SweepOptions, type SweepStore } from '../../lib/registration/sweep.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { connectChange as storeConnect } from '../fixtures/connect-change.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { startFaultProxy } from '../fixtures/fault-proxy.ts';
import { DEFAULT_FAIL_STATIC } from '../fixtures/sweep-policies.ts';

/**
 * A sweep run whose store fails some writes (after the SDK's own retries): each failure is
 * isolated, the run goes on with every other entry, and the next run retries what failed.
 * Real store; only the failing calls are wrapped.
 */
const MINUTE = 60_000;
const NOW = Date.UTC(2025, 5, 1, 12);
const NS = 'shop';
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

async function freshStore() {
  return (await freshRegistry(dynamo.endpoint, 'sweep-failures')).store;
}

function connectChange(name: string, connectionId: string, connectedAt: number) {
  return storeConnect({ name, namespace: NS, connectionId, connectedAt });
}

const throttled = () =>
  Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ThrottlingException',
  });

/** The store, with `method` throttled whenever `fails` says so (after the SDK's retries). */
function withFailing<
  K extends
    | 'deleteSwept'
    | 'dropHolders'
    | 'livenessMark'
    | 'saveDisruptionRecord'
    | 'sweepNamespaces',
>(
  store: RegistrarStore,
  method: K,
  fails: (...args: Parameters<NonNullable<SweepStore[K]>>) => boolean,
): SweepStore {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (property !== method) return value.bind(target);
      return (...args: Parameters<NonNullable<SweepStore[K]>>) =>
        fails(...args) ? Promise.reject(throttled()) : value.apply(target, args);
    },
  });
}

/** A fresh registry whose store reads and writes through a proxy that can fail requests. */
async function behindFaultProxy(prefix: string, seed: number) {
  const proxy = await startFaultProxy(dynamo.endpoint, seed);
  const { tableName } = await freshRegistry(dynamo.endpoint, prefix);
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: proxy.endpoint });
  const store = composeRegistry(documentClientFor(raw), tableName);
  const close = async () => {
    raw.destroy();
    await proxy.close();
  };
  return { proxy, store, close };
}

/** `count` VMs of the namespace that left cleanly ten minutes ago (due now). */
async function leftCleanly(store: RegistrarStore, namespace: string, count: number) {
  for (let i = 0; i < count; i += 1) {
    const name = `vm-${i}`;
    const connectionId = `${namespace}-${i}`;
    await store.connect(
      storeConnect({ name, namespace, connectionId, connectedAt: NOW - 60 * MINUTE }),
    );
    await store.leave({
      connectionId,
      entry: { namespace, name },
      at: NOW - 10 * MINUTE,
      departure: 'clean',
    });
  }
}

/** A VM of NS that connected an hour ago and left abnormally ten minutes ago (due now). */
async function departedTenMinutesAgo(store: RegistrarStore, name: string) {
  await store.connect(connectChange(name, `c-${name}`, NOW - 60 * MINUTE));
  await store.leave({
    connectionId: `c-${name}`,
    entry: { namespace: NS, name },
    at: NOW - 10 * MINUTE,
  });
}

function options(overrides: Partial<SweepOptions> = {}): SweepOptions {
  return {
    now: NOW,
    policy,
    maxDeletes: 1000,
    deletesPerSecond: 1000,
    sleep: async () => {},
    ...overrides,
  };
}

describe('a sweep run with failing reads', () => {
  it('still deletes what the other index shards hold when one shard cannot be read', async () => {
    // The store reads through a proxy that throttles every Query of one index shard (the
    // SDK's retries included): a throttled partition of the sweep index.
    const { proxy, store, close } = await behindFaultProxy('sweep-reads', 3);
    try {
      await leftCleanly(store, NS, 12);
      proxy.plan = {
        rate: 1,
        when: 'before',
        kind: 'throttle',
        match: (operation, body) => operation === 'Query' && body.includes(`"L#${NS}#1"`),
      };

      const first = await runSweep(store, options());
      expect(first.failed).toBe(1);
      expect(first.firstFailure).toMatch(/Rate of requests/);
      const left = await store.listEntries(NS);
      // Only the unreadable shard's entries are left (at least one lands in each of 4 shards).
      expect(first.deleted.length + left.length).toBe(12);
      expect(first.deleted.length).toBeGreaterThan(0);
      expect(left.length).toBeGreaterThan(0);

      proxy.plan = { rate: 0, when: 'before', kind: 'internal' };
      const second = await runSweep(store, options({ now: NOW + MINUTE }));
      expect(second.failed).toBe(0);
      expect(second.deleted).toHaveLength(left.length);
      expect(await store.listEntries(NS)).toEqual([]);
    } finally {
      await close();
    }
  }, 60_000);
});

describe("a sweep run that cannot read one namespace's departures", () => {
  it('sweeps every other namespace, and that one on the next run', async () => {
    const { proxy, store, close } = await behindFaultProxy('sweep-namespace-reads', 5);
    try {
      await leftCleanly(store, 'a', 3);
      await leftCleanly(store, 'b', 3);
      // Every read of namespace a's clean departures is throttled, the SDK's retries included.
      proxy.plan = {
        rate: 1,
        when: 'before',
        kind: 'throttle',
        match: (operation, body) => operation === 'Query' && body.includes('"L#a#'),
      };

      const first = await runSweep(store, options());
      expect(first.deleted.map((entry) => `${entry.namespace}/${entry.name}`).sort()).toEqual([
        'b/vm-0',
        'b/vm-1',
        'b/vm-2',
      ]);
      expect(first.failed).toBeGreaterThan(0);
      expect(first.firstFailure).toMatch(/Rate of requests/);

      proxy.plan = { rate: 0, when: 'before', kind: 'internal' };
      const second = await runSweep(store, options({ now: NOW + MINUTE }));
      expect(second.failed).toBe(0);
      expect(second.deleted.map((entry) => entry.namespace)).toEqual(['a', 'a', 'a']);
    } finally {
      await close();
    }
  }, 60_000);

  it('still finds the namespaces from the cell counters when the namespace index cannot be read', async () => {
    const store = await freshStore();
    await departedTenMinutesAgo(store, 'gone');
    const flaky = withFailing(store, 'sweepNamespaces', () => true);

    const result = await runSweep(flaky, {
      ...options(),
      failStatic: DEFAULT_FAIL_STATIC,
    });

    expect(result.deleted.map((entry) => entry.name)).toEqual(['gone']);
    expect(result.failed).toBe(1);
  });
});

describe('a sweep run with failing writes', () => {
  it('deletes every other due entry when some deletes fail, and the next run deletes the rest', async () => {
    const store = await freshStore();
    for (let i = 0; i < 6; i += 1) {
      await store.connect(connectChange(`vm-${i}`, `c-${i}`, NOW - 60 * MINUTE));
      await store.leave({
        connectionId: `c-${i}`,
        entry: { namespace: NS, name: `vm-${i}` },
        at: NOW - 10 * MINUTE,
      });
    }
    const failing = new Set(['vm-1', 'vm-4']);
    const flaky = withFailing(store, 'deleteSwept', (record) =>
      failing.has(record.entry.metadata.name),
    );

    const first = await runSweep(flaky, options());
    expect(first.deleted.map((d) => d.name).sort()).toEqual(['vm-0', 'vm-2', 'vm-3', 'vm-5']);
    expect(first.failed).toBe(2);
    expect(first.firstFailure).toMatch(/Rate of requests/);

    failing.clear();
    const second = await runSweep(flaky, options({ now: NOW + MINUTE }));
    expect(second.deleted.map((d) => d.name).sort()).toEqual(['vm-1', 'vm-4']);
    expect(second.failed).toBe(0);
    expect(await store.listEntries(NS)).toEqual([]);
  });

  it('checks every other connected entry when one liveness write fails, and the next run resumes at that entry', async () => {
    const store = await freshStore();
    const connectedAt = NOW - 30 * MINUTE;
    for (let i = 0; i < 3; i += 1)
      await store.connect(connectChange(`vm-${i}`, `c-${i}`, connectedAt + i));
    let failDrop = true;
    const flaky = withFailing(store, 'dropHolders', (entry) => failDrop && entry.name === 'vm-1');
    // Every connection is gone (their $disconnects were lost).
    const liveness = { check: async () => 'gone' as const };
    const windowed = options({ liveness, connectSettleMs: 0 });

    // A run over the whole 30 minutes: every entry is due once.
    await store.setLivenessMark(connectedAt - MINUTE);
    const first = await runSweep(flaky, windowed);
    expect(first.livenessDisconnected).toBe(2);
    expect(first.failed).toBe(1);
    // The mark moves up to the failed entry's due time (its connect + 5 intervals of 5 min,
    // the one in this run's span), not past it: the next run starts there.
    expect(await store.livenessMark()).toBe(connectedAt + 1 + 25 * MINUTE);

    failDrop = false;
    const second = await runSweep(flaky, { ...windowed, now: NOW + 1_000 });
    expect(second.livenessDisconnected).toBe(1);
    expect(second.failed).toBe(0);
    expect(await store.livenessMark()).toBe(NOW + 1_000);
    const states = await store.listEntries(NS);
    expect(states.map((r) => r.connection?.connectedAt)).toEqual([undefined, undefined, undefined]);
  });
});

describe('a sweep run whose bookkeeping fails', () => {
  it('still deletes what is due when the liveness mark cannot be read, and checks liveness next run', async () => {
    const store = await freshStore();
    await departedTenMinutesAgo(store, 'gone');
    await store.connect(connectChange('lost', 'c-lost', NOW - 30 * MINUTE));
    await store.setLivenessMark(NOW - 31 * MINUTE);
    let markFails = true;
    const flaky = withFailing(store, 'livenessMark', () => markFails);
    const liveness = { check: async () => 'gone' as const };

    const first = await runSweep(flaky, options({ liveness, connectSettleMs: 0 }));
    expect(first.deleted.map((d) => d.name)).toEqual(['gone']);
    expect(first.failed).toBe(1);
    expect(first.livenessChecked).toBe(0);
    // The mark did not move: the window is checked by the next run.
    expect(await store.livenessMark()).toBe(NOW - 31 * MINUTE);

    markFails = false;
    const second = await runSweep(
      flaky,
      options({ now: NOW + 1_000, liveness, connectSettleMs: 0 }),
    );
    expect(second.failed).toBe(0);
    expect(second.livenessDisconnected).toBe(1);
  });
});
