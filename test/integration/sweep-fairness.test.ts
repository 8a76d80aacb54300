import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { runSweep, type SweepOptions } from '../../lib/registration/sweep.ts';
import { encodeEntry, entryKey, sweepShard } from '../../lib/store/item-codec.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import {
  type FreshRegistry,
  freshRegistry,
  startTestDynamo,
  type TestDynamo,
} from '../fixtures/dynamo.ts';
import {
  DEFAULT_FAIL_STATIC,
  DEFAULT_SWEEP_POLICY,
  HOUR,
  MINUTE,
} from '../fixtures/sweep-policies.ts';

/**
 * The fair sweeper (lib/registration/sweep-deletions.ts), against the real store: a run's
 * candidates, deletions and time are shared among the namespaces with due work, so one
 * namespace's backlog, of any size and kind, never delays another's due removal past the first
 * run after it became due. `evil` plays the attacker with a token for its own namespace only;
 * `shop` is the tenant whose crashed VM must leave as fast as without `evil`.
 */
const T0 = Date.UTC(2025, 5, 1, 12);
const policy = DEFAULT_SWEEP_POLICY;
const failStatic = DEFAULT_FAIL_STATIC;
const ZONE = 'eu-west-1/eu-west-1a';

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

async function freshStore() {
  return (await freshRegistry(dynamo.endpoint, 'fairness')).store;
}

/** `count` VMs of a namespace that connected at T0 and left at `at`, in `zones` in turn. */
async function departed(
  store: RegistrarStore,
  namespace: string,
  count: number,
  at: number,
  departure: 'clean' | 'abnormal',
  zones: readonly string[] = [ZONE],
) {
  const names = Array.from({ length: count }, (_, i) => `${namespace}-${departure}-${i}`);
  await Promise.all(
    names.map(async (name, i) => {
      const zone = zones[i % zones.length] ?? ZONE;
      await store.connect(
        connectChange({
          name,
          namespace,
          connectionId: `${name}-c`,
          connectedAt: T0,
          locality: `${zone}/rack-1`,
        }),
      );
      await store.leave({ connectionId: `${name}-c`, entry: { namespace, name }, at, departure });
    }),
  );
  return names;
}

/** VMs that stay connected (a namespace's population, so its cells are not all away). */
async function connected(store: RegistrarStore, namespace: string, count: number) {
  for (let i = 0; i < count; i++) {
    const name = `${namespace}-up-${i}`;
    await store.connect(
      connectChange({
        name,
        namespace,
        connectionId: `${name}-c`,
        connectedAt: T0 + 30 * MINUTE,
        locality: `${ZONE}/rack-1`,
      }),
    );
  }
}

function options(now: number, overrides: Partial<SweepOptions> = {}): SweepOptions {
  return {
    now,
    policy,
    maxDeletes: 5,
    deletesPerSecond: 1_000,
    sleep: async () => {},
    failStatic,
    ...overrides,
  };
}

/** The names in a namespace's departures of one kind, disconnected up to T0 + 1 h. */
async function queued(store: RegistrarStore, namespace: string, kind: 'D' | 'L') {
  const names: string[] = [];
  for await (const record of store.departuresOf(namespace, kind, T0 + HOUR)) {
    names.push(record.entry.metadata.name);
  }
  return names;
}

const exists = async (store: RegistrarStore, namespace: string, name: string) =>
  (await store.getEntry({ namespace, name })) !== undefined;

const namesIn = (result: { deleted: { namespace: string; name: string }[] }, namespace: string) =>
  result.deleted.filter((entry) => entry.namespace === namespace).map((entry) => entry.name);

describe('a fair sweep run', () => {
  it("removes shop's crashed VM in the first run after its grace although evil's clean backlog is ten runs deep and older", async () => {
    const store = await freshStore();
    await connected(store, 'shop', 5);
    await departed(store, 'evil', 50, T0 + MINUTE, 'clean');
    const [crashed = ''] = await departed(store, 'shop', 1, T0 + 10 * MINUTE, 'abnormal');
    await connected(store, 'evil', 1);

    const result = await runSweep(store, options(T0 + 15 * MINUTE));

    expect(namesIn(result, 'shop')).toEqual([crashed]);
    expect(await exists(store, 'shop', crashed)).toBe(false);
    // evil gets the rest of the run: its backlog goes on shrinking, at its share.
    expect(namesIn(result, 'evil')).toHaveLength(4);
    expect(result.namespacesWithDue).toBe(2);
  }, 120_000);

  it("removes shop's crashed VM in the first run while evil's abnormal backlog sits in slowed cells of zones it invented", async () => {
    const store = await freshStore();
    await connected(store, 'shop', 5);
    const invented = ['mars-1/mars-1a', 'mars-1/mars-1b', 'mars-1/mars-1c', 'mars-1/mars-1d'];
    // A sweep sees evil's fakes connected first: the population its cells' shares are taken of.
    await departed(store, 'evil', 240, T0 + MINUTE, 'abnormal', invented);
    const [crashed = ''] = await departed(store, 'shop', 1, T0 + 10 * MINUTE, 'abnormal');

    // A run may read 80 candidates: evil's 240 alone would use them all (and its older ones
    // come first in time).
    const first = await runSweep(store, options(T0 + 15 * MINUTE, { maxDeletes: 40 }));

    expect(namesIn(first, 'shop')).toEqual([crashed]);
    // evil's cells are slowed (every fake away): they delete at the secondary rate (a new
    // slowdown starts with one sweep interval of credit), the rest is skipped in evil's own
    // turns; shop's cell is not slowed.
    expect(first.disruption?.zones.find((zone) => zone.namespace === 'shop')?.disrupted).toBe(
      false,
    );
    const slowed = Object.keys(first.slowed);
    expect(slowed.length).toBe(invented.length);
    expect(slowed.every((cell) => cell.startsWith('evil#'))).toBe(true);
    expect(namesIn(first, 'evil').length).toBeLessThan(40);
  }, 120_000);

  it('gives each namespace with due work an equal share of the run, and the unused share to the others', async () => {
    const store = await freshStore();
    await departed(store, 'a', 10, T0, 'clean');
    await departed(store, 'b', 10, T0 + 1, 'clean');
    await departed(store, 'c', 1, T0 + 2, 'clean');

    const result = await runSweep(store, options(T0 + HOUR, { maxDeletes: 7 }));

    // Round-robin: c's one, then a and b alternate for the rest.
    expect(namesIn(result, 'c')).toHaveLength(1);
    expect(namesIn(result, 'a')).toHaveLength(3);
    expect(namesIn(result, 'b')).toHaveLength(3);
    // Paced for all together: one interval between consecutive deletes, whoever's they are.
    const sleeps: number[] = [];
    await runSweep(
      store,
      options(T0 + HOUR, {
        maxDeletes: 3,
        deletesPerSecond: 10,
        sleep: async (ms) => void sleeps.push(ms),
      }),
    );
    expect(sleeps).toEqual([100, 100]);
  }, 120_000);

  it('takes the namespaces in turn across runs when more have due work than a run may delete', async () => {
    const store = await freshStore();
    for (const [i, namespace] of ['n1', 'n2', 'n3', 'n4'].entries()) {
      await departed(store, namespace, 3, T0 + i * MINUTE, 'clean');
    }
    // Two runs a sweep interval apart, each allowed 2 deletions: n1 and n2 have the oldest
    // backlogs, yet n3 and n4 are not left waiting behind them.
    const first = await runSweep(store, options(T0 + HOUR, { maxDeletes: 2 }));
    const second = await runSweep(store, options(T0 + HOUR + MINUTE, { maxDeletes: 2 }));

    const served = [...first.deleted, ...second.deleted].map((entry) => entry.namespace);
    expect(new Set(served)).toEqual(new Set(['n1', 'n2', 'n3', 'n4']));
    expect(first.namespacesWithDue).toBe(4);
  }, 120_000);

  it("hands over after one sweep interval, so shop's VM that became due during evil's long run leaves in the next", async () => {
    // `npm start`'s case: sweeps every 300 ms, 1,000 deletions a run at 50/s. A run that
    // starts on evil's backlog could go on for 20 s; shop's VM, due 100 ms into it, is not in
    // its queues (read at the start), and waited for all of it.
    const store = await freshStore();
    const interval = 300;
    const grace = 2_000;
    const start = T0 + HOUR;
    await departed(store, 'evil', 60, start - grace - 10_000, 'clean');
    await connected(store, 'shop', 5);
    const [crashed = ''] = await departed(store, 'shop', 1, start - grace + 100, 'abnormal');
    let time = start;
    const paced = (now: number): Partial<SweepOptions> => ({
      policy: { ...policy, gracePeriodMs: grace, sweepIntervalMs: interval },
      failStatic: { ...failStatic, sweepIntervalMs: interval },
      maxDeletes: 1_000,
      deletesPerSecond: 50,
      clock: () => time,
      sleep: async (ms) => {
        time += ms;
      },
      now,
    });

    const first = await runSweep(store, options(start, paced(start)));

    // 300 ms at one deletion per 20 ms: 16 of evil's 60, then the run hands over.
    expect(first.intervalUsed).toBe(true);
    expect(first.stoppedEarly).toBe(false);
    expect(namesIn(first, 'evil').length).toBeLessThanOrEqual(16);
    expect(await exists(store, 'shop', crashed)).toBe(true);

    const second = await runSweep(store, options(time, paced(time)));
    // In the next run's first round: at most one of evil's deletions before it.
    expect(second.deleted.slice(0, 2).map((entry) => entry.name)).toContain(crashed);
    expect(await exists(store, 'shop', crashed)).toBe(false);
    expect((await queued(store, 'evil', 'L')).length).toBeGreaterThan(20);
  }, 120_000);
});

describe('the liveness checks under a deletion backlog', () => {
  it('complete every due check while the deletion lane is still working through a backlog it cannot finish', async () => {
    const store = await freshStore();
    const now = T0 + 3 * HOUR;
    await departed(store, 'evil', 400, now - HOUR, 'clean');
    // 30 connected entries of shop, each due for a check within the last sweep interval.
    for (let i = 0; i < 30; i++) {
      const name = `shop-live-${i}`;
      const dueAt = now - MINUTE + i * 1_000;
      await store.connect(
        connectChange({
          name,
          namespace: 'shop',
          connectionId: `${name}-c`,
          connectedAt: dueAt - 5 * MINUTE,
        }),
      );
    }
    await store.setLivenessMark(now - MINUTE);
    const checked: string[] = [];
    // API Gateway's answer, as a stand-in (the management API cannot run here): all alive.
    const liveness = {
      check: async (connectionId: string) => {
        checked.push(connectionId);
        return 'alive' as const;
      },
    };
    const began = Date.now();

    // Deletions paced at 20/s (real sleeps): the backlog takes 20 s, the run has 10 s. Before
    // the lanes ran side by side, the deletions took all of it and no check was made.
    const result = await runSweep(store, {
      ...options(now, { maxDeletes: 1_000, deletesPerSecond: 20 }),
      sleep: undefined,
      policy: { ...policy, livenessIntervalMs: 5 * MINUTE, sweepIntervalMs: MINUTE },
      liveness,
      outOfTime: () => Date.now() - began > 10_000,
    });

    expect(result.stoppedEarly).toBe(true);
    expect(result.deleted.length).toBeLessThan(400);
    expect(result.livenessChecked).toBe(30);
    expect(new Set(checked).size).toBe(30);
    // Every due check was made: the mark moved to the end of the run's span.
    expect(await store.livenessMark()).toBe(now);
  }, 120_000);
});

describe('after an upgrade from release 0.1.0', () => {
  /** Moves a departed entry's index key back to where 0.1.0 wrote it: `L#<shard>` / `D#<shard>`. */
  async function asReleasedBefore(registry: FreshRegistry, names: string[]) {
    const { store, client, tableName } = registry;
    for (const name of names) {
      const namespace = name.split('-')[0] ?? '';
      const record = await store.getEntry({ namespace, name });
      const kind = record?.connection?.departure === 'clean' ? 'L' : 'D';
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: entryKey({ namespace, name }),
          UpdateExpression: 'SET sweepState = :state',
          ExpressionAttributeValues: { ':state': `${kind}#${sweepShard({ namespace, name })}` },
        }),
      );
    }
  }

  it('sweeps the departures 0.1.0 keyed in the shared keys, beside the new ones, each kind apart', async () => {
    const registry = await freshRegistry(dynamo.endpoint, 'upgrade');
    const { store } = registry;
    await connected(store, 'shop', 5);
    const evilOld = await departed(store, 'evil', 30, T0 + MINUTE, 'clean');
    const [shopOld = ''] = await departed(store, 'shop', 1, T0 + 2 * MINUTE, 'abnormal');
    await asReleasedBefore(registry, [...evilOld, shopOld]);
    // Where they are now, as 0.1.0 left them: not in their namespaces' own keys.
    expect(await store.getEntry({ namespace: 'shop', name: shopOld })).toBeDefined();
    expect(await queued(store, 'shop', 'D')).not.toContain(shopOld);
    const [shopNew = ''] = await departed(store, 'shop', 1, T0 + 3 * MINUTE, 'clean');

    const first = await runSweep(store, options(T0 + 15 * MINUTE));

    // evil's 30 old clean departures would fill the run's reads if the kinds shared them.
    expect(namesIn(first, 'shop').sort()).toEqual([shopNew, shopOld].sort());
    let left = 30 - namesIn(first, 'evil').length;
    for (let run = 1; left > 0 && run < 20; run++) {
      left -= namesIn(
        await runSweep(store, options(T0 + 15 * MINUTE + run * MINUTE)),
        'evil',
      ).length;
    }
    expect(left).toBe(0);
    expect(await store.listEntries('evil')).toEqual([]);
  }, 60_000);
});

describe("a namespace's own queues", () => {
  it('do not keep a crashed VM behind its own namespace’s clean backlog', async () => {
    const store = await freshStore();
    await connected(store, 'shop', 3);
    await departed(store, 'shop', 20, T0 + MINUTE, 'clean');
    const [crashed = ''] = await departed(store, 'shop', 1, T0 + 10 * MINUTE, 'abnormal');

    const result = await runSweep(store, options(T0 + 15 * MINUTE, { maxDeletes: 2 }));

    expect(result.deleted.map((entry) => entry.name)).toContain(crashed);
  });

  it('are found through the namespace index when no cell counter names the namespace', async () => {
    const { store, client, tableName } = await freshRegistry(dynamo.endpoint, 'index-only');
    await store.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'quiet' },
      spec: { template: { ports: { http: 8080 } } },
    });
    // Written as the store writes a departed entry, but without its counter writes (a crash
    // between the two writes): only the namespace index names `quiet`.
    await client.send(
      new PutCommand({
        TableName: tableName,
        Item: encodeEntry({
          entry: {
            apiVersion: 'networking.istio.io/v1',
            kind: 'WorkloadEntry',
            metadata: { name: 'gone', namespace: 'quiet' },
            spec: { address: '10.0.0.9' },
          },
          autoRegistrationGroup: 'web',
          connection: {
            controller: 'c',
            disconnectedAt: T0,
            departure: 'clean',
            connectionIds: [],
          },
          revision: 3,
        }),
      }),
    );
    expect(await store.zoneCounts()).toEqual([]);

    const result = await runSweep(store, options(T0 + HOUR));

    expect(result.deleted).toEqual([{ namespace: 'quiet', name: 'gone', reason: 'disconnected' }]);
  });
});

describe('the departure keys under late, repeated and reversed events', () => {
  it('keep an entry whose late $disconnect came after its VM reconnected out of its departures', async () => {
    const store = await freshStore();
    const ref = { namespace: 'shop', name: 'vm' };
    const change = (id: string, at: number) =>
      connectChange({ ...ref, connectionId: id, connectedAt: at });
    await store.connect(change('old', T0));
    await store.connect(change('new', T0 + 1_000));
    // The old connection's $disconnect arrives after the new one connected (make before break).
    await store.leave({ connectionId: 'old', entry: ref, at: T0 + 2_000, departure: 'abnormal' });

    const result = await runSweep(store, options(T0 + HOUR));

    expect(result.deleted).toEqual([]);
    expect((await store.getEntry(ref))?.connection?.connectedAt).toBe(T0 + 1_000);
  });

  it('hold a departure once when its $disconnect is delivered twice, and drop it when the VM comes back', async () => {
    const store = await freshStore();
    const ref = { namespace: 'shop', name: 'vm' };
    await store.connect(connectChange({ ...ref, connectionId: 'a', connectedAt: T0 }));
    for (let delivery = 0; delivery < 2; delivery++) {
      await store.leave({ connectionId: 'a', entry: ref, at: T0 + 1_000, departure: 'clean' });
    }
    expect(await queued(store, 'shop', 'L')).toEqual(['vm']);

    // The VM comes back before the sweep: it leaves its namespace's departures.
    await store.connect(connectChange({ ...ref, connectionId: 'b', connectedAt: T0 + 2_000 }));
    expect(await queued(store, 'shop', 'L')).toEqual([]);
    expect((await runSweep(store, options(T0 + HOUR))).deleted).toEqual([]);
  });
});

describe('a rollback to release 0.1.0', () => {
  it("moves this release's departures back to 0.1.0's shared keys, where its sweep finds them, resumably", async () => {
    const registry = await freshRegistry(dynamo.endpoint, 'rollback');
    const { store } = registry;
    const clean = await departed(store, 'shop', 3, T0, 'clean');
    const abnormal = await departed(store, 'evil', 2, T0, 'abnormal');
    // One that came back meanwhile: connected again, not a departure to move.
    await store.connect(
      connectChange({
        name: clean[0] ?? '',
        namespace: 'shop',
        connectionId: 'back',
        connectedAt: T0 + 1,
      }),
    );

    // Cut short after 2 moves, then run again: every departure moved once.
    expect(await store.moveDeparturesToSharedKeys(2)).toEqual({ moved: 2, more: true });
    expect(await store.moveDeparturesToSharedKeys()).toEqual({ moved: 2, more: false });
    expect(await store.moveDeparturesToSharedKeys()).toEqual({ moved: 0, more: false });

    // Where 0.1.0 reads them: its sweep of the shared keys (`L#<shard>`, `D#<shard>`).
    const shared: string[] = [];
    const cutoffs = { disconnectedAtOrBefore: T0 + HOUR, connectedBefore: 0 };
    for await (const record of store.sweepCandidates(cutoffs, 100, ['L', 'D'])) {
      shared.push(record.entry.metadata.name);
    }
    expect(shared.sort()).toEqual([...clean.slice(1), ...abnormal].sort());
    expect(
      (await store.getEntry({ namespace: 'shop', name: clean[0] ?? '' }))?.connection?.connectedAt,
    ).toBe(T0 + 1);
  });
});
