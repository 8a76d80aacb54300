import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';
import { ISTIO_API_VERSION, type WorkloadEntry } from '../../lib/domain/model.ts';
import type { SweepPolicy } from '../../lib/domain/sweep-policy.ts';
import type { RegistryStore } from '../../lib/registrar-store.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import { runSweep, type SweepOptions, type SweepStore } from '../../lib/registration/sweep.ts';
import { encodeEntry } from '../../lib/store/item-codec.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import { ZONE_SHARDS } from '../../lib/store/table-definition.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { NO_DISRUPTION, NO_HEARTBEATS } from '../fixtures/sweep-stand-ins.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
// Defaults: grace 5 min, max connection age 2 h, so connected entries are stale after 3 h.
const policy: SweepPolicy = { gracePeriodMs: 5 * MINUTE, maxConnectionAgeMs: 2 * HOUR };
const NOW = Date.UTC(2025, 5, 1, 12);
const NS = 'shop';

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

/** A fresh table on the shared server: every sweep reads its whole index. */
function freshStore() {
  return freshRegistry(dynamo.endpoint, 'sweep');
}

function template(name: string): WorkloadEntry {
  return {
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadEntry',
    metadata: { name, namespace: NS },
    spec: { address: '10.0.0.1' },
  };
}

function connectChange(name: string, connectionId: string, connectedAt: number): ConnectChange {
  return {
    entry: template(name),
    autoRegistrationGroup: 'web',
    origin: 'test-origin',
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: false,
    groupGeneration: 1,
    connectionId,
    connectedAt,
    controller: 'workload-registrar',
    identity: { principal: 'token:t1' },
  };
}

async function disconnected(store: RegistryStore, name: string, at: number) {
  await store.connect(connectChange(name, `${name}-c`, at - HOUR));
  await store.leave({ connectionId: `${name}-c`, entry: { namespace: NS, name }, at });
}

/**
 * For stand-in stores in runs without a liveness check, whose candidates all come from the
 * shared keys: these are never called, or find nothing.
 */
const NO_LIVENESS_STORE: Pick<
  SweepStore,
  | 'connectedIn'
  | 'dropHolders'
  | 'livenessMark'
  | 'setLivenessMark'
  | 'sweepNamespaces'
  | 'departuresOf'
> = {
  sweepNamespaces: async () => [],
  async *departuresOf() {},
  async *connectedIn() {},
  dropHolders: async () => 'unchanged',
  livenessMark: async () => undefined,
  setLivenessMark: async () => {},
};

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

const exists = async (store: RegistryStore, name: string) =>
  (await store.getEntry({ namespace: NS, name })) !== undefined;

describe('runSweep', () => {
  it('deletes an entry disconnected for the grace period and keeps a younger one', async () => {
    const { store } = await freshStore();
    await disconnected(store, 'gone-5m', NOW - 5 * MINUTE);
    await disconnected(store, 'gone-4m59s', NOW - 5 * MINUTE + 1000);

    const result = await runSweep(store, options());

    expect(result.deleted).toEqual([{ namespace: NS, name: 'gone-5m', reason: 'disconnected' }]);
    expect(await exists(store, 'gone-5m')).toBe(false);
    expect(await exists(store, 'gone-4m59s')).toBe(true);
  });

  it('deletes a connected entry whose disconnect never arrived, after 1.5 x the maximum age', async () => {
    const { store } = await freshStore();
    await store.connect(connectChange('lost', 'lost-c', NOW - 3 * HOUR - 1));
    await store.connect(connectChange('live', 'live-c', NOW - 3 * HOUR));

    const result = await runSweep(store, options());

    expect(result.deleted).toEqual([{ namespace: NS, name: 'lost', reason: 'stale' }]);
    expect(await store.getConnection('lost-c')).toBeUndefined();
    expect(await exists(store, 'live')).toBe(true);
  });

  it('never touches a hand-made entry', async () => {
    const { store } = await freshStore();
    await store.applyEntry(template('by-hand'));

    const result = await runSweep(store, options({ now: NOW + 365 * 24 * HOUR }));

    expect(result).toMatchObject({ deleted: [], candidatesRead: 0 });
    expect(await exists(store, 'by-hand')).toBe(true);
  });

  it('re-checks every candidate, so an index returning a hand-made entry deletes nothing', async () => {
    // A stand-in store: the real index cannot return a hand-made entry, which is the point.
    const handMade: EntryRecord = {
      entry: template('by-hand'),
      connection: { controller: 'c', disconnectedAt: 0, connectionIds: [] },
      revision: 1,
    };
    const deletes: EntryRecord[] = [];
    const store: SweepStore = {
      // As the index would hold it: in the abnormal departures' key (no departure recorded).
      async *sweepCandidates(_cutoffs, _limit, states) {
        if (states?.includes('D')) yield handMade;
      },
      deleteSwept: async (record) => {
        deletes.push(record);
        return 'deleted';
      },
      ...NO_LIVENESS_STORE,
      ...NO_DISRUPTION,
      ...NO_HEARTBEATS,
    };

    const result = await runSweep(store, options());

    expect(deletes).toEqual([]);
    expect(result).toMatchObject({ deleted: [], candidatesRead: 1 });
  });

  it('deletes nothing in a dry run and reports what it would delete', async () => {
    const { store, client } = await freshStore();
    await disconnected(store, 'due', NOW - HOUR);
    const requests = countRequests(client);

    const result = await runSweep(store, options({ dryRun: true }));

    expect(result).toMatchObject({
      deleted: [{ namespace: NS, name: 'due', reason: 'disconnected' }],
      conflicts: 0,
      candidatesRead: 1,
      dryRun: true,
    });
    // Nothing written. Reads: the keys every namespace shares (0.1.0's clean and abnormal
    // departures, stale connected entries: 3 x 4 shards), the namespaces (the namespace index,
    // and the 32 cell-counter partitions), and the one namespace's own clean and abnormal
    // departures (2 x 4 shards).
    expect(requests.counts()).toEqual({ Query: 12 + 1 + ZONE_SHARDS + 8 });
    expect(await exists(store, 'due')).toBe(true);
  });

  it('deletes at most maxDeletes per run and leaves the rest for the next run', async () => {
    const { store } = await freshStore();
    for (let i = 0; i < 5; i++) await disconnected(store, `due-${i}`, NOW - HOUR - i);

    const first = await runSweep(store, options({ maxDeletes: 2 }));
    const second = await runSweep(store, options({ maxDeletes: 10 }));

    expect(first.deleted).toHaveLength(2);
    expect(first.candidatesRead).toBe(2);
    expect(second.deleted).toHaveLength(3);
  });

  it('paces deletions at deletesPerSecond through the injected sleep', async () => {
    const { store } = await freshStore();
    for (let i = 0; i < 4; i++) await disconnected(store, `due-${i}`, NOW - HOUR);
    const sleeps: number[] = [];

    await runSweep(
      store,
      options({ deletesPerSecond: 10, sleep: async (ms) => void sleeps.push(ms) }),
    );

    // 1000 ms / 10 per second = 100 ms between consecutive deletes.
    expect(sleeps).toEqual([100, 100, 100]);
  });

  it('counts a delete lost to a reconnect as a conflict and keeps the entry', async () => {
    const { store } = await freshStore();
    await disconnected(store, 'returns', NOW - HOUR);
    // The VM reconnects after the sweeper read the entry and before its delete.
    const racing: SweepStore = {
      ...NO_LIVENESS_STORE,
      ...NO_DISRUPTION,
      ...NO_HEARTBEATS,
      sweepCandidates: (cutoffs, limit) => store.sweepCandidates(cutoffs, limit),
      sweepNamespaces: () => store.sweepNamespaces(),
      departuresOf: (namespace, kind, cutoff) => store.departuresOf(namespace, kind, cutoff),
      deleteSwept: async (record) => {
        await store.connect(connectChange('returns', 'returns-2', NOW));
        return store.deleteSwept(record);
      },
    };

    const result = await runSweep(racing, options());

    expect(result).toMatchObject({ deleted: [], conflicts: 1 });
    expect(
      (await store.getEntry({ namespace: NS, name: 'returns' }))?.connection?.connectedAt,
    ).toBe(NOW);
  });
});

describe('runSweep at scale', () => {
  const TOTAL = 10_000;
  const DUE = 100;

  it(`reads about one item per deleted entry among ${TOTAL} entries with ${DUE} due`, async () => {
    const { store, client, tableName } = await freshStore();
    // Seeded as stored items (BatchWriteItem) rather than 10,000 connects: the subject is the
    // sweep's read cost, and the connect writes are covered by the store's own tests.
    const records = Array.from({ length: TOTAL }, (_, i) => seededRecord(i, i < DUE));
    for (let start = 0; start < records.length; start += 25) {
      const batch = records
        .slice(start, start + 25)
        .map((record) => ({ PutRequest: { Item: encodeEntry(record) } }));
      await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: batch } }));
    }
    const requests = countRequests(client);

    const result = await runSweep(store, options());

    const readPerDeleted = requests.itemsRead() / result.deleted.length;
    console.info(
      `sweep: ${requests.itemsRead()} items read for ${result.deleted.length} deleted (${readPerDeleted} per entry); requests ${JSON.stringify(requests.counts())}`,
    );
    expect(result.deleted).toHaveLength(DUE);
    expect(readPerDeleted).toBeLessThanOrEqual(1.2);
    expect(requests.counts().Scan).toBeUndefined();
  }, 120_000);
});

/** Due entries alternate between disconnected past the grace period and stale; the rest are fresh or hand-made. */
function seededRecord(i: number, due: boolean): EntryRecord {
  const entry = template(`vm-${i}`);
  if (i % 10 === 9 && !due) return { entry, revision: 1 };
  const base = { entry, autoRegistrationGroup: 'web', revision: 1 };
  if (i % 2 === 0) {
    const at = due ? NOW - 10 * MINUTE : NOW - MINUTE;
    return { ...base, connection: { controller: 'c', disconnectedAt: at, connectionIds: [] } };
  }
  const at = due ? NOW - 4 * HOUR : NOW - HOUR;
  return {
    ...base,
    connection: {
      controller: 'c',
      connectedAt: at,
      connectionIds: [`conn-${i}`],
      newestConnectionId: `conn-${i}`,
    },
  };
}

describe('liveness checks', () => {
  const livenessPolicy = { ...policy, livenessIntervalMs: 5 * MINUTE, sweepIntervalMs: MINUTE };

  /** API Gateway's answer, as a stand-in: the management API cannot run here. */
  function gateway(open: Set<string>) {
    const calls: string[] = [];
    return {
      calls,
      liveness: {
        check: async (id: string) => {
          calls.push(id);
          return open.has(id) ? ('alive' as const) : ('gone' as const);
        },
      },
    };
  }

  it('marks an entry whose $disconnect was lost disconnected within one interval, then deletes it after the grace period', async () => {
    const { store } = await freshStore();
    const start = NOW - 30 * MINUTE;
    await store.connect(connectChange('lost', 'lost-c', start));
    const api = gateway(new Set());
    let disconnectedAt: number | undefined;
    let deletedAt: number | undefined;
    for (let now = start; now <= start + 20 * MINUTE; now += MINUTE) {
      await runSweep(store, {
        ...options({ now, policy: livenessPolicy }),
        liveness: api.liveness,
      });
      const record = await store.getEntry({ namespace: NS, name: 'lost' });
      disconnectedAt ??= record?.connection?.disconnectedAt;
      if (!record && deletedAt === undefined) deletedAt = now;
    }
    // Its connection vanished right after connecting. Due one interval on (start + 5 min), it
    // is checked by the run whose span holds that time, the one at start + 6 min: found within
    // interval + one sweep period, and deleted a grace period later.
    expect(disconnectedAt).toBe(start + 6 * MINUTE);
    expect(deletedAt).toBe(start + 11 * MINUTE);
  }, 120_000); // 21 sweeps: DynamoDB Local on a loaded 2-core machine needs more than 30 s

  it('checks each connected entry once per interval, and writes nothing while its holder is open', async () => {
    const { store } = await freshStore();
    const start = NOW - 2 * HOUR;
    await store.connect(connectChange('alive', 'alive-c', start + 17_000));
    const api = gateway(new Set(['alive-c']));
    const revision = (await store.getEntry({ namespace: NS, name: 'alive' }))?.revision;
    // An hour of sweeps, one a minute, some 40 s late and one doubled up. The entry is due at
    // 5:17, 10:17, ..., 60:17: each is checked once, by the first run whose span holds it.
    const runs = Array.from(
      { length: 62 },
      (_, i) => start + i * MINUTE + (i % 7 === 0 ? 40_000 : 0),
    );
    runs.splice(30, 0, runs[30] ?? 0);
    const checkedAt: number[] = [];
    for (const now of runs) {
      const result = await runSweep(store, {
        ...options({ now, policy: livenessPolicy }),
        liveness: api.liveness,
      });
      if (result.livenessChecked > 0) checkedAt.push(Math.round((now - start) / 1000));
    }
    expect(checkedAt).toEqual([
      360, 660, 960, 1300, 1560, 1860, 2140, 2460, 2760, 3060, 3400, 3660,
    ]);
    // One GET @connections per check (one holder): 12 an hour at the 5 min interval.
    expect(api.calls).toHaveLength(12);
    expect((await store.getEntry({ namespace: NS, name: 'alive' }))?.revision).toBe(revision);
  }, 120_000); // 63 sweeps: DynamoDB Local on a loaded 2-core machine needs more than 30 s

  it('never drops a holder younger than the connect settle time (its $connect may still run)', async () => {
    const { store } = await freshStore();
    await store.connect(connectChange('young', 'young-c', NOW - 5 * MINUTE - 10_000));
    const api = gateway(new Set());

    const result = await runSweep(store, {
      ...options({ now: NOW, policy: livenessPolicy }),
      liveness: api.liveness,
      connectSettleMs: 6 * MINUTE,
    });

    expect(result.livenessChecked).toBe(1);
    // Asked for its activity (silence is judged at any age), but its 410 drops nothing.
    expect(api.calls).toEqual(['young-c']);
    expect(result.phantomsDropped).toBe(0);
    expect(
      (await store.getEntry({ namespace: NS, name: 'young' }))?.connection?.connectedAt,
    ).toBeDefined();
  });
});
