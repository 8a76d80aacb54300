import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DepartureKind } from '../../lib/domain/disruption.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * A departure is as clean as the VM's last live connection (DESIGN, fail static). A restart
 * of the registrar loses the `$disconnect`s of the connections it had: they stay listed as
 * holders. The VM reconnects, then stops cleanly: its clean close must not be turned into an
 * abnormal departure (held back by fail static) by those leftovers, whether they are dropped
 * before or after the clean close, or their own `$disconnect` arrives late. Real store on
 * dynalite.
 */
const T0 = Date.UTC(2025, 5, 1, 12);
const NS = 'shop';
const ZONE = 'eu-west-1/eu-west-1a';
const ref = (name: string) => ({ namespace: NS, name });

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

/** `vm` connected as `old` at T0 (its $disconnect lost in a restart), then as `new` at T0+10s. */
async function restartedVm(store: RegistrarStore, name: string) {
  for (const [connectionId, at] of [
    ['old', T0],
    ['new', T0 + 10_000],
  ] as const) {
    await store.connect(
      connectChange({
        name,
        namespace: NS,
        connectionId: `${name}-${connectionId}`,
        connectedAt: at,
        locality: `${ZONE}/r`,
      }),
    );
  }
}

function leave(
  store: RegistrarStore,
  name: string,
  which: 'old' | 'new',
  departure: DepartureKind,
  at: number,
  replaced = false,
) {
  return store.leave({
    connectionId: `${name}-${which}`,
    entry: ref(name),
    at,
    departure,
    since: which === 'old' ? T0 : T0 + 10_000,
    replaced,
  });
}

async function departureOf(store: RegistrarStore, name: string) {
  const record = await store.getEntry(ref(name));
  return {
    departure: record?.connection?.departure,
    disconnected: record?.connection?.disconnectedAt !== undefined,
  };
}

async function away(store: RegistrarStore) {
  const cells = await store.zoneCounts();
  return cells.reduce((sum, cell) => sum + cell.away, 0);
}

describe('a clean stop after leftovers of lost $disconnects', () => {
  it('is clean when the leftover is dropped by a liveness check after the clean close', async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'clean-after');
    await restartedVm(store, 'vm');
    expect(await leave(store, 'vm', 'new', 'clean', T0 + 60_000)).toMatchObject({
      outcome: 'still-held',
    });

    expect(await store.dropHolders(ref('vm'), ['vm-old'], T0 + 120_000)).toBe('disconnected');

    expect(await departureOf(store, 'vm')).toEqual({ departure: 'clean', disconnected: true });
    expect(await away(store)).toBe(0);
  });

  it('is clean when the leftover is dropped before the clean close', async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'clean-before');
    await restartedVm(store, 'vm');
    expect(await store.dropHolders(ref('vm'), ['vm-old'], T0 + 30_000)).toBe('still-held');

    expect(await leave(store, 'vm', 'new', 'clean', T0 + 60_000)).toEqual({
      outcome: 'disconnected',
    });

    expect(await departureOf(store, 'vm')).toEqual({ departure: 'clean', disconnected: true });
    expect(await away(store)).toBe(0);
  });

  it("is clean when the leftover's own $disconnect arrives late, abnormal", async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'clean-late');
    await restartedVm(store, 'vm');
    await leave(store, 'vm', 'new', 'clean', T0 + 60_000);

    expect(await leave(store, 'vm', 'old', 'abnormal', T0 + 61_000)).toEqual({
      outcome: 'disconnected',
    });

    expect(await departureOf(store, 'vm')).toEqual({ departure: 'clean', disconnected: true });
    expect(await away(store)).toBe(0);
  });

  it('stays abnormal when the newest connection is the one that dropped', async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'abnormal-newest');
    await restartedVm(store, 'vm');
    // The older connection closes cleanly (not a rotation's close), the newer one crashes.
    await leave(store, 'vm', 'old', 'clean', T0 + 60_000);
    expect(await leave(store, 'vm', 'new', 'abnormal', T0 + 61_000)).toEqual({
      outcome: 'disconnected',
    });
    expect(await departureOf(store, 'vm')).toEqual({ departure: 'abnormal', disconnected: true });
    expect(await away(store)).toBe(1);
  });

  it("does not mark a rotation's clean close of the old connection: the VM lives on in the new one", async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'rotation');
    await restartedVm(store, 'vm');
    await leave(store, 'vm', 'old', 'clean', T0 + 60_000, true);
    // The VM then crashes: abnormal, as it should be.
    expect(await store.dropHolders(ref('vm'), ['vm-new'], T0 + 120_000)).toBe('disconnected');
    expect(await departureOf(store, 'vm')).toEqual({ departure: 'abnormal', disconnected: true });
  });

  it('costs an abnormal close that leaves another holder no more writes than before the mark', async () => {
    const { store, client } = await freshRegistry(dynamo.endpoint, 'abnormal-cost');
    await restartedVm(store, 'vm');
    const requests = countRequests(client);
    // The old connection drops (1006) while the new one holds: "last" fails, "one of many" lands.
    expect(await leave(store, 'vm', 'old', 'abnormal', T0 + 60_000)).toMatchObject({
      outcome: 'still-held',
    });
    expect(requests.counts()).toEqual({ UpdateItem: 2 });
  });

  it('forgets the mark with the episode: a later connection that crashes leaves abnormally', async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'next-episode');
    await restartedVm(store, 'vm');
    await leave(store, 'vm', 'new', 'clean', T0 + 60_000);
    await store.dropHolders(ref('vm'), ['vm-old'], T0 + 120_000);
    // The VM comes back later, with a leftover again, and this time its newest one crashes.
    await store.connect(
      connectChange({
        name: 'vm',
        namespace: NS,
        connectionId: 'vm-third',
        connectedAt: T0 + 200_000,
        locality: `${ZONE}/r`,
      }),
    );
    expect(await store.dropHolders(ref('vm'), ['vm-third'], T0 + 300_000)).toBe('disconnected');
    expect(await departureOf(store, 'vm')).toEqual({ departure: 'abnormal', disconnected: true });
  });
});
