import { describe, expect, it } from 'vitest';
import { DashboardData } from '../../lib/dashboard-server/dashboard-data.ts';
import { indexEntry } from '../../lib/dashboard-server/entry-rows.ts';
import { NamespaceSnapshots } from '../../lib/dashboard-server/namespace-snapshots.ts';
import { buildOverview } from '../../lib/dashboard-server/overview.ts';
import { noRefusals } from '../../lib/dashboard-server/refusals.ts';
import type { DisruptionRecord } from '../../lib/domain/disruption.ts';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';

/** The overview's counts per namespace and zone, its fail-static banner, and the read cache. */
const T0 = Date.parse('2026-03-01T12:00:00Z');
const ZONE_A = 'us-east-1/us-east-1a';
const ZONE_B = 'us-east-1/us-east-1b';

function entry(
  name: string,
  zone: string,
  state: 'connected' | 'away' | 'hand-made',
  healthy?: 'True' | 'False',
  revision = 1,
): EntryRecord {
  return {
    entry: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name, namespace: 'shop' },
      spec: { address: '10.0.0.1', locality: `${zone}/rack-1` },
    },
    ...(state === 'hand-made'
      ? {}
      : {
          autoRegistrationGroup: 'web',
          connection: {
            controller: 'workload-registrar',
            connectionIds: state === 'connected' ? ['c1'] : [],
            ...(state === 'connected' ? { connectedAt: T0 } : { disconnectedAt: T0 }),
          },
        }),
    ...(healthy ? { health: { status: healthy, lastProbeTime: T0, lastTransitionTime: T0 } } : {}),
    revision,
  };
}

const POLICY = {
  threshold: 0.55,
  windowMs: 300_000,
  secondaryDeletesPerSecond: 0.1,
  holdBoundMs: 3_600_000,
};

function record(overrides: Partial<DisruptionRecord>): DisruptionRecord {
  return {
    mode: 'normal',
    since: T0,
    credit: {},
    evaluatedAt: T0,
    disruptedZones: [],
    away: 0,
    policy: POLICY,
    ...overrides,
  };
}

describe('the overview', () => {
  const entries = [
    entry('a', ZONE_A, 'connected', 'True'),
    entry('b', ZONE_A, 'connected', 'False'),
    entry('c', ZONE_A, 'connected'),
    entry('d', ZONE_A, 'away', 'True'),
    entry('e', ZONE_B, 'hand-made', 'True'),
  ].map((r) => indexEntry(r, T0));

  it('counts each cell: connected, healthy and unhealthy in service, away, hand-made', () => {
    const overview = buildOverview({
      namespaces: [{ namespace: 'shop', entries }],
      zones: [{ namespace: 'shop', zone: ZONE_A, connected: 3, away: 1 }],
      disruption: record({}),
      now: T0,
    });
    expect(overview.cells.map(({ failStatic: _f, ...cell }) => cell)).toEqual([
      // The away VM's last verdict (True) is not counted healthy: its VM is gone.
      {
        namespace: 'shop',
        zone: ZONE_A,
        entries: 4,
        connected: 3,
        healthy: 1,
        unhealthy: 1,
        away: 1,
        handMade: 0,
      },
      {
        namespace: 'shop',
        zone: ZONE_B,
        entries: 1,
        connected: 0,
        healthy: 1,
        unhealthy: 0,
        away: 0,
        handMade: 1,
      },
    ]);
    expect(overview.fleet).toEqual({
      entries: 5,
      connected: 3,
      healthy: 2,
      unhealthy: 1,
      away: 1,
      handMade: 1,
    });
    expect(overview.cells[0]?.failStatic).toEqual({
      state: 'normal',
      note: null,
      until: null,
      counted: { connected: 3, away: 1 },
    });
    expect(overview.banner).toBeNull();
  });

  it('shows a banner while deletions are held, saying where, why and until when', () => {
    const overview = buildOverview({
      namespaces: [{ namespace: 'shop', entries }],
      zones: [{ namespace: 'shop', zone: ZONE_A, connected: 0, away: 4 }],
      disruption: record({ mode: 'held', holdSince: T0, reason: 'all-zones-disrupted' }),
      now: T0 + 60_000,
    });
    expect(overview.banner).toEqual({
      level: 'held',
      title: 'Deletions held in every namespace until 2026-03-01T13:00:00Z at the latest',
      detail: expect.stringMatching(
        /^more than 55% of the entries of every namespace in every zone went away abnormally\. .*registrar sweep --force\.$/,
      ),
    });
    expect(overview.cells[0]?.failStatic.state).toBe('held');
  });

  it('shows a banner while cells are slowed, naming them', () => {
    const overview = buildOverview({
      namespaces: [{ namespace: 'shop', entries }],
      zones: [{ namespace: 'shop', zone: ZONE_A, connected: 1, away: 3 }],
      disruption: record({
        disruptedZones: [`shop#${ZONE_A}`],
        slowedSince: { [`shop#${ZONE_A}`]: T0 },
      }),
      now: T0 + 60_000,
    });
    expect(overview.banner).toMatchObject({
      level: 'slowed',
      title: 'Deletions slowed in 1 cell',
      detail: expect.stringContaining(`shop in ${ZONE_A} until 2026-03-01T13:00:00Z`),
    });
    // The fleet's word beside the banner is the cells' word, not the run's "normal".
    expect(overview.failStatic.mode).toBe('slowed');
    expect(overview.cells[0]?.failStatic.state).toBe('slowed');
  });

  it('shows no banner once a slowdown outlived its bound', () => {
    const overview = buildOverview({
      namespaces: [{ namespace: 'shop', entries }],
      zones: [{ namespace: 'shop', zone: ZONE_A, connected: 1, away: 3 }],
      disruption: record({
        disruptedZones: [`shop#${ZONE_A}`],
        slowedSince: { [`shop#${ZONE_A}`]: T0 },
      }),
      now: T0 + 2 * 3_600_000,
    });
    expect(overview.banner).toBeNull();
    expect(overview.cells[0]?.failStatic).toMatchObject({
      state: 'normal',
      note: 'slowdown bound passed',
    });
    expect(overview.failStatic.mode).toBe('normal');
  });
});

describe('the namespace reads', () => {
  function reader() {
    const reads: string[] = [];
    let records = [entry('a', ZONE_A, 'connected')];
    let now = T0;
    // The reads' own duration, on a clock of the test's: each read takes `readMs`.
    let elapsed = 0;
    let readMs = 0;
    let release: () => void = () => {};
    let gate: Promise<void> | undefined;
    const snapshots = new NamespaceSnapshots(
      async (namespace) => {
        reads.push(namespace);
        if (gate) await gate;
        elapsed += readMs;
        return records;
      },
      () => now,
      1_000,
      () => elapsed,
    );
    return {
      snapshots,
      reads,
      setRecords: (next: EntryRecord[]) => {
        records = next;
      },
      advance: (ms: number) => {
        now += ms;
      },
      readsTake: (ms: number) => {
        readMs = ms;
      },
      hold: () => {
        gate = new Promise((resolve) => {
          release = () => {
            gate = undefined;
            resolve();
          };
        });
      },
      release: () => release(),
    };
  }

  it('reads a namespace once for every caller waiting on it', async () => {
    const r = reader();
    r.hold();
    const waiting = [
      r.snapshots.current('shop'),
      r.snapshots.current('shop'),
      r.snapshots.refresh('shop'),
    ];
    r.release();
    const [a, b, c] = await Promise.all(waiting);
    expect(r.reads).toEqual(['shop']);
    expect(a).toBe(b);
    expect(b).toBe(c);
  });

  it('reads again no sooner than the refresh interval', async () => {
    const r = reader();
    await r.snapshots.refresh('shop');
    r.advance(999);
    await r.snapshots.refresh('shop');
    expect(r.reads).toHaveLength(1);
    r.advance(1);
    await r.snapshots.refresh('shop');
    expect(r.reads).toHaveLength(2);
  });

  it('reads a namespace that takes long to read no sooner than 20 times that read', async () => {
    const r = reader();
    r.readsTake(300);
    await r.snapshots.refresh('shop');
    r.advance(5_999);
    await r.snapshots.refresh('shop');
    expect(r.reads).toHaveLength(1);
    r.advance(1);
    await r.snapshots.refresh('shop');
    expect(r.reads).toHaveLength(2);
  });

  it('changes the version when an entry changes, and only then', async () => {
    const r = reader();
    const first = await r.snapshots.refresh('shop');
    r.advance(1_000);
    expect((await r.snapshots.refresh('shop')).version).toBe(first.version);
    r.setRecords([entry('a', ZONE_A, 'away', undefined, 2)]);
    r.advance(1_000);
    expect((await r.snapshots.refresh('shop')).version).not.toBe(first.version);
  });
});

describe('opening a namespace never read', () => {
  // In-memory stand-ins for the table's reads: the read of the whole namespace waits until the
  // test lets it finish, as a 20,000-entry namespace keeps the table busy for seconds.
  function dashboard() {
    const all = ['a', 'b', 'c', 'd'].map((name) => entry(name, ZONE_A, 'connected'));
    let finish: () => void = () => {};
    const whole = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const data = new DashboardData(
      {
        catalog: {
          listNamespaces: async () => ({ namespaces: ['shop'], complete: true }),
          listEntries: async () => {
            await whole;
            return all;
          },
          getEntry: async () => undefined,
        },
        disruption: { zoneCounts: async () => [], disruptionRecord: async () => undefined },
        sweepRuns: { recent: async () => [] },
        refusals: noRefusals('test'),
        firstEntries: async (_namespace, limit) => all.slice(0, limit),
        target: 'test',
        now: () => T0,
      },
      1_000,
    );
    return { data, finish };
  }
  const QUERY = { selector: [], sort: 'name', order: 'asc', page: 1, pageSize: 2 } as const;

  it('shows its first entries by name at once, marked partial, then the whole namespace', async () => {
    const { data, finish } = dashboard();
    const first = await data.entries('shop', { ...QUERY });
    expect(first.partial).toBe(true);
    expect(first.rows.map((row) => row.name)).toEqual(['a', 'b']);
    finish();
    await data.refreshEntries('shop');
    const whole = await data.entries('shop', { ...QUERY });
    expect(whole.partial).toBeUndefined();
    expect(whole).toMatchObject({ total: 4, matched: 4, pages: 2 });
  });

  it('waits for the whole namespace when the page asks for a filter, an order or a page of its own', async () => {
    const { data, finish } = dashboard();
    const filtered = data.entries('shop', { ...QUERY, health: 'unknown' });
    let answered = false;
    void filtered.then(() => {
      answered = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    finish();
    expect((await filtered).partial).toBeUndefined();
    expect((await filtered).matched).toBe(4);
  });
});

describe('a registry that stops answering, or is replaced', () => {
  function dashboard() {
    let down = false;
    let at = T0;
    let namespaces = ['shop'];
    let change: () => void = () => {};
    const data = new DashboardData(
      {
        catalog: {
          listNamespaces: async () => {
            if (down) throw new Error('connect ECONNREFUSED 127.0.0.1:41234');
            return { namespaces, complete: true };
          },
          listEntries: async () => [entry('a', ZONE_A, 'connected')],
          getEntry: async () => undefined,
        },
        disruption: { zoneCounts: async () => [], disruptionRecord: async () => undefined },
        sweepRuns: { recent: async () => [] },
        refusals: noRefusals('test'),
        target: 'test',
        now: () => at,
        onTargetChange: (listener) => {
          change = listener;
        },
      },
      1_000,
    );
    return {
      data,
      stop: () => {
        down = true;
        // The next live update is due.
        at += 2_000;
      },
      restartWith: (names: string[]) => {
        down = false;
        namespaces = names;
        change();
      },
    };
  }

  it('serves no numbers read before a failed read as current: a page load reads again', async () => {
    const registry = dashboard();
    expect((await registry.data.overview()).fleet.entries).toBe(1);
    registry.stop();
    await expect(registry.data.overview(true)).rejects.toThrow('ECONNREFUSED');
    // A page load asks for no refresh, but the last read failed: no cached answer.
    await expect(registry.data.overview()).rejects.toThrow('ECONNREFUSED');
  });

  it("drops what it read from a replaced registry, and shows the new one's", async () => {
    const registry = dashboard();
    expect((await registry.data.overview()).cells.map((cell) => cell.namespace)).toEqual(['shop']);
    registry.restartWith(['books']);
    expect((await registry.data.overview()).cells.map((cell) => cell.namespace)).toEqual(['books']);
  });
});
