import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper.ts';
import { readConfig } from '../../lib/config.ts';
import type { Dependencies } from '../../lib/dependencies.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * One sweep at a time without reserved concurrency (which a new account's concurrency limit
 * of 10 cannot grant): a DynamoDB lease until the run's deadline. Real conditional writes
 * (dynalite); the Lambda contexts are test doubles, since no Lambda runs here.
 */
const T0 = Date.parse('2026-06-01T00:00:00Z');

let dynamo: TestDynamo;
let store: RegistrarStore;
beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
});
afterAll(async () => {
  await dynamo?.close();
});
beforeEach(async () => {
  // Each test starts with the lease free.
  await store.releaseSweepLease('a');
  await store.releaseSweepLease('b');
  await store.releaseSweepLease('crashed');
});

describe('sweep lease (store)', () => {
  it('goes to one holder until its deadline, and to the next once it has run out', async () => {
    expect(await store.acquireSweepLease('a', T0, T0 + 50_000)).toEqual({ acquired: true });
    expect(await store.acquireSweepLease('b', T0 + 60_000 - 1, T0 + 110_000)).toEqual({
      acquired: true,
    });
    expect(await store.acquireSweepLease('a', T0 + 60_000, T0 + 110_000)).toEqual({
      acquired: false,
      holder: 'b',
      until: T0 + 110_000,
    });
  });

  it('refuses a second holder while the first runs, and is free once released', async () => {
    expect(await store.acquireSweepLease('a', T0, T0 + 50_000)).toEqual({ acquired: true });
    expect(await store.acquireSweepLease('b', T0 + 1_000, T0 + 51_000)).toMatchObject({
      acquired: false,
      holder: 'a',
    });
    // A retried put of the holder's own acquire (its first attempt applied) is still its own.
    expect(await store.acquireSweepLease('a', T0 + 10, T0 + 50_000)).toEqual({ acquired: true });
    await store.releaseSweepLease('b'); // not b's: changes nothing
    expect(await store.acquireSweepLease('b', T0 + 2_000, T0 + 52_000)).toMatchObject({
      acquired: false,
    });
    await store.releaseSweepLease('a');
    expect(await store.acquireSweepLease('b', T0 + 2_000, T0 + 52_000)).toEqual({
      acquired: true,
    });
  });
});

describe('sweeper handler with the lease', () => {
  function dependencies(registry: Dependencies['store'], now: () => number): Dependencies {
    return {
      ...NO_CAPABILITIES,
      config: readConfig({
        REGISTRAR_TABLE: dynamo.tableName,
        REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
      }),
      store: registry,
      tokens: new DynamoDbTokenStore(dynamo.client, dynamo.tableName),
      ...sweeperRecordsInMemory(),
      now,
    };
  }
  function handlerAt(now: () => number): ReturnType<typeof createSweeperHandler> {
    return createSweeperHandler(dependencies(store, now));
  }

  it('a late tick, while a run still holds the lease, skips and touches nothing else', async () => {
    // The previous run (a crashed or slow one) holds the lease for 50 s.
    await store.acquireSweepLease('crashed', T0, T0 + 50_000);
    const late = await handlerAt(() => T0 + 60_000 - 30_000)({}, lambdaContext('sweeper'));
    expect(late.mode).toBe('skipped');
    expect(late.candidatesRead).toBe(0);

    // At its deadline the lease has run out: the next tick sweeps.
    const next = await handlerAt(() => T0 + 50_000)({}, lambdaContext('sweeper'));
    expect(next.mode).not.toBe('skipped');
  });

  it('releases the lease when the run ends, so the next tick need not wait', async () => {
    const first = await handlerAt(() => T0)({}, lambdaContext('sweeper'));
    expect(first.mode).not.toBe('skipped');
    const second = await handlerAt(() => T0 + 1_000)({}, lambdaContext('sweeper'));
    expect(second.mode).not.toBe('skipped');
  });

  it('a run killed before it released (a local runtime gets 15 min) blocks one interval at most', async () => {
    const killed = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key === 'releaseSweepLease') return () => Promise.resolve();
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const long = { ...lambdaContext('sweeper'), getRemainingTimeInMillis: () => 15 * 60_000 };
    await createSweeperHandler(dependencies(killed, () => T0))({}, long);
    const interval = readConfig({ REGISTRAR_TABLE: 't' }).sweep.sweepIntervalMs;
    const early = await handlerAt(() => T0 + interval - 1)({}, lambdaContext('sweeper'));
    expect(early.mode).toBe('skipped');
    const after = await handlerAt(() => T0 + interval)({}, lambdaContext('sweeper'));
    expect(after.mode).not.toBe('skipped');
  });

  it('releases the lease when the run fails', async () => {
    // Every store call but the lease's fails (a fault injected here; the lease writes are real).
    const lease = new Set(['acquireSweepLease', 'releaseSweepLease']);
    const failing = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== 'function') return value;
        if (lease.has(String(key))) return value.bind(target);
        return () => {
          throw new Error('injected: store unavailable');
        };
      },
    });
    const run = createSweeperHandler(dependencies(failing, () => T0));
    await expect(run({}, lambdaContext('sweeper'))).rejects.toThrow(/injected/);
    expect(await store.acquireSweepLease('b', T0 + 1, T0 + 50_000)).toEqual({ acquired: true });
  });
});
