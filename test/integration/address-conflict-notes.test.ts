import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryHistory } from '../../lib/domain/entry-history.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { CONFLICT_NOTE_INTERVAL_MS } from '../../lib/registration/address-claim.ts';
import type { AddressClaim } from '../../lib/registration/entry-lifecycle-store.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * The note a refused claim of an address leaves on its holder, on real conditional writes
 * (dynalite): one per interval however many claims arrive at once, and never in the list of
 * the holder's own events, which a burst from another namespace must not trim.
 */
const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const MINUTE = 60_000;
const HOLDER = { namespace: 'shop', name: 'web-10-0-0-1' };

let dynamo: TestDynamo;
let store: RegistrarStore;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  // The holder's own story: registered, its VM went away, and came back.
  await store.connect(connectChange({ ...HOLDER, connectionId: 'a', connectedAt: T0 }));
  await store.leave({ entry: HOLDER, connectionId: 'a', at: T0 + MINUTE, departure: 'clean' });
  await store.connect(
    connectChange({ ...HOLDER, connectionId: 'b', connectedAt: T0 + 2 * MINUTE }),
  );
});
afterAll(async () => {
  await dynamo?.close();
});

const claim = (at: number, n: number): AddressClaim => ({
  address: '10.0.0.1',
  network: '',
  entry: { namespace: 'evil', name: `web-10.0.0.1-${n}` },
  at,
});

/** `count` refused claims at once, each noted as `$connect` notes it; how many landed. */
async function burst(at: number, count: number): Promise<number> {
  const landed = await Promise.all(
    Array.from({ length: count }, (_, n) =>
      store.noteAddressConflict(HOLDER, claim(at + n, n), CONFLICT_NOTE_INTERVAL_MS),
    ),
  );
  return landed.filter(Boolean).length;
}

describe('address conflict notes', () => {
  it('sets the note in one conditional write that encodes the interval', async () => {
    const requests = countRequests(dynamo.client);
    const other = { namespace: 'shop', name: 'web-10-0-0-9' };
    await store.connect(connectChange({ ...other, connectionId: 'x', connectedAt: T0 }));
    requests.reset();

    expect(await store.noteAddressConflict(other, claim(T0 + 5_000, 1), 60_000)).toBe(true);

    expect(requests.counts()).toEqual({ UpdateItem: 1 });
    expect(requests.requests()[0]?.input).toMatchObject({
      UpdateExpression: 'SET addressConflict = :conflict',
      ConditionExpression:
        'attribute_exists(pk) AND (attribute_not_exists(addressConflict) OR addressConflict.#at <= :noteBefore)',
      ExpressionAttributeNames: { '#at': 'at' },
      ExpressionAttributeValues: {
        ':conflict': { at: T0 + 5_000, claimant: 'evil/web-10.0.0.1-1' },
        ':noteBefore': T0 + 5_000 - 60_000,
      },
    });
  });

  it("lands one note per interval from two bursts of 30, and keeps the holder's own events", async () => {
    const first = T0 + 3 * MINUTE;
    expect(await burst(first, 30)).toBe(1);
    // Within the interval: none.
    expect(await burst(first + 30_000, 30)).toBe(0);
    // The next interval: one again.
    expect(await burst(first + CONFLICT_NOTE_INTERVAL_MS + 30, 30)).toBe(1);

    const record = await store.getEntry(HOLDER);
    expect(record?.events?.map((event) => event.reason)).toEqual(['Disconnected', 'Reconnected']);
    expect(record?.addressConflict?.claimant).toMatch(/^evil\/web-10\.0\.0\.1-\d+$/);
    const shown = entryHistory(record as NonNullable<typeof record>, first + 2 * MINUTE);
    // (No Registered: the store-level entry has no creationTimestamp.)
    expect(shown.map((event) => event.reason)).toEqual([
      'Disconnected',
      'Reconnected',
      'AddressInUse',
    ]);
  });
});
