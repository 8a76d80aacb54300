import { describe, expect, it } from 'vitest';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';
import type { ObjectRef } from '../../lib/domain/model.ts';
import type { MaintenanceNotice } from '../../lib/protocol/maintenance-notice.ts';
import {
  type AgentNotifier,
  changeMaintenance,
  type MaintenanceRequest,
  type MaintenanceResult,
} from '../../lib/registration/cordon-entries.ts';
import type { CordonStore } from '../../lib/registration/entry-event-store.ts';

/**
 * The bulk cordon's pacing, isolation and report, on a manual clock. The store and the
 * management API are stand-ins here (their real behaviour: test/integration/entry-events-store
 * and cordon-local); what is under test is the use case's own logic.
 */
const T0 = 1_000_000;

function recordOf(ref: ObjectRef, holders: string[]): EntryRecord {
  return {
    entry: { apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry', metadata: ref, spec: {} },
    autoRegistrationGroup: 'web',
    revision: 1,
    connection: { controller: 'c', connectionIds: holders },
  };
}

class Clock {
  now = T0;
  sleeps: number[] = [];
  sleep = async (ms: number) => {
    this.sleeps.push(ms);
    this.now += ms;
  };
}

const refs = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ namespace: 'shop', name: `web-${i}` }));

function request(clock: Clock, overrides: Partial<MaintenanceRequest> = {}): MaintenanceRequest {
  return {
    cordon: true,
    message: 'INC-1',
    ratePerSecond: 4,
    concurrency: 2,
    now: () => clock.now,
    sleep: clock.sleep,
    ...overrides,
  };
}

describe('changeMaintenance', () => {
  it('starts the i-th entry no earlier than i / rate after the first, never more than the concurrency at once', async () => {
    const clock = new Clock();
    const started: number[] = [];
    let inFlight = 0;
    let most = 0;
    const store: CordonStore = {
      async cordon(ref, _message, at) {
        started.push(at);
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight -= 1;
        return { outcome: 'cordoned', record: recordOf(ref, []) };
      },
      uncordon: async () => ({ outcome: 'not-found' }),
    };
    const results = await changeMaintenance(store, undefined, refs(5), request(clock), () => {});
    expect(results.map((r) => r.outcome)).toEqual(Array(5).fill('cordoned'));
    // 4 per second: one every 250 ms.
    expect(started).toEqual([T0, T0 + 250, T0 + 500, T0 + 750, T0 + 1000]);
    expect(most).toBeLessThanOrEqual(2);
  });

  it('tells each holder of a changed entry, reports the ones it could not, and tells nothing for an entry already cordoned', async () => {
    const clock = new Clock();
    const posted: [string, MaintenanceNotice][] = [];
    const notifier: AgentNotifier = {
      async post(connectionId, notice) {
        posted.push([connectionId, notice]);
        if (connectionId === 'gone') return 'gone';
        if (connectionId === 'denied') return { failed: 'AccessDeniedException: no' };
        return 'sent';
      },
    };
    const store: CordonStore = {
      async cordon(ref) {
        return ref.name === 'web-1'
          ? { outcome: 'already-cordoned', record: recordOf(ref, ['c9']) }
          : { outcome: 'cordoned', record: recordOf(ref, ['c1', 'gone', 'denied']) };
      },
      uncordon: async () => ({ outcome: 'not-found' }),
    };
    const results = await changeMaintenance(store, notifier, refs(2), request(clock), () => {});
    expect(results[0]).toMatchObject({
      outcome: 'cordoned',
      told: 1,
      untold: [{ connectionId: 'denied', reason: 'AccessDeniedException: no' }],
    });
    expect(results[1]).toMatchObject({ outcome: 'already-cordoned', told: 0, untold: [] });
    expect(posted.map(([id]) => id)).toEqual(['c1', 'gone', 'denied']);
    expect(posted[0]?.[1]).toEqual({
      action: 'maintenance',
      cordoned: true,
      message: 'INC-1',
      at: new Date(T0).toISOString(),
    });
  });

  it('goes on after an entry that failed, and says which, and which agents no endpoint could reach', async () => {
    const clock = new Clock();
    const seen: MaintenanceResult[] = [];
    const store: CordonStore = {
      cordon: async () => ({ outcome: 'not-found' }),
      async uncordon(ref) {
        if (ref.name === 'web-0') throw new Error('ProvisionedThroughputExceededException');
        return { outcome: 'uncordoned', record: recordOf(ref, ['c2']) };
      },
    };
    const results = await changeMaintenance(
      store,
      undefined,
      refs(2),
      request(clock, { cordon: false }),
      (result) => seen.push(result),
    );
    expect(results.map((r) => [r.outcome, r.error])).toEqual([
      ['failed', 'ProvisionedThroughputExceededException'],
      ['uncordoned', undefined],
    ]);
    expect(results[1]?.untold).toEqual([{ connectionId: 'c2', reason: 'no management endpoint' }]);
    expect(seen).toHaveLength(2);
  });
});
