import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// The sweep itself (lib/registration/sweep.ts) has its own tests over dynalite; here it is a
// stand-in that records when it ran, so each test is about the invocation around it.
const order: string[] = [];
const sweep = vi.hoisted(() => ({ result: undefined as unknown }));
vi.mock('../../lib/registration/sweep.ts', async (original) => {
  const real = await original<typeof import('../../lib/registration/sweep.ts')>();
  return {
    ...real,
    runSweep: vi.fn(async () => {
      order.push('sweep');
      return sweep.result;
    }),
    runHeartbeatLane: vi.fn(async () => {
      order.push('heartbeat lane');
      return sweep.result;
    }),
  };
});

import { readConfig } from '../../lib/config.ts';
import type { SchemaRecord } from '../../lib/domain/table-schema.ts';
import { logger } from '../../lib/observability.ts';
import type { Migration, SchemaStore } from '../../lib/registration/schema-store.ts';
import { runHeartbeatLane, runSweep } from '../../lib/registration/sweep.ts';
import { emptyResult } from '../../lib/registration/sweep-result.ts';
import { runHeartbeatLaneTick } from '../../lib/sweep/heartbeat-lane-run.ts';
import type { SweepLease } from '../../lib/sweep/sweep-lease-store.ts';
import { runSweepTick, SweepIncompleteError } from '../../lib/sweep/sweep-run.ts';
import type { SweepRunDependencies } from '../../lib/sweep/sweep-run-dependencies.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * One sweeper invocation as lib/sweep runs it, lane 0 and heartbeat lane k: the lease, the
 * table's schema before the sweep and its migrations after, the policy and run records, and
 * what a failure leaves behind. Explicit times; a fake store and schema record.
 */
const T0 = Date.parse('2026-06-01T00:00:00Z');
const config = readConfig({ REGISTRAR_TABLE: 't', REGISTRAR_HEARTBEAT_LANES: '3' });
const INTERVAL = config.sweep.sweepIntervalMs;

beforeEach(() => {
  order.length = 0;
  sweep.result = emptyResult(false);
});
afterEach(() => {
  vi.clearAllMocks();
  vi.restoreAllMocks();
});

function leaseStore(answer: SweepLease = { acquired: true }) {
  return {
    acquireSweepLease: vi.fn(async (..._args: unknown[]) => {
      order.push('acquire');
      return answer;
    }),
    releaseSweepLease: vi.fn(async (..._args: unknown[]) => {
      order.push('release');
    }),
  };
}

function dependencies(store = leaseStore(), more: Partial<SweepRunDependencies> = {}) {
  const deps: SweepRunDependencies = {
    config,
    store: store as unknown as SweepRunDependencies['store'],
    // A table with nothing to migrate and records kept in memory, unless the test gives its own.
    ...sweeperRecordsInMemory(),
    now: () => T0,
    ...more,
  };
  return { deps, store };
}

function invocation(lane = 0, remainingMs = 30_000) {
  return { lane, tickAt: T0, holder: 'req-1', remainingMs: () => remainingMs };
}

/** A schema record and one migration of one page, each recording when it is used. */
function tables(record?: Partial<SchemaRecord>) {
  let stored: SchemaRecord | undefined = record && {
    schema: 1,
    readableFrom: 1,
    writtenBy: '0.1.0',
    lastRunBy: '0.1.0',
    lastRunAt: T0 - 1,
    history: [],
    revision: 1,
    ...record,
  };
  const schema: SchemaStore = {
    read: async () => {
      order.push('schema read');
      return stored;
    },
    write: async (next, expected) => {
      if (expected !== stored?.revision) return 'conflict';
      stored = { ...next, revision: (expected ?? 0) + 1 };
      return 'written';
    },
  };
  const migrations: Migration[] = [
    {
      id: 2,
      name: 'two',
      summary: 'a test migration',
      keepsOlderReaders: true,
      step: async () => {
        order.push('migration page');
        return { items: 1, writes: 1 };
      },
    },
  ];
  return { schema, migrations, stored: () => stored };
}

describe('the sweep tick (lane 0)', () => {
  it('sweeps nothing, reads no schema and releases nothing when another run holds the lease', async () => {
    const store = leaseStore({ acquired: false, holder: 'req-0', until: T0 + 20_000 });
    const { deps } = dependencies(store, tables());

    const summary = await runSweepTick(deps, invocation());

    expect(summary.mode).toBe('skipped');
    expect(order).toEqual(['acquire']);
    expect(runSweep).not.toHaveBeenCalled();
    expect(store.releaseSweepLease).not.toHaveBeenCalled();
  });

  it("takes the sweep's lease (no lane) until the deadline, never longer than one interval", async () => {
    const { deps, store } = dependencies();

    await runSweepTick(deps, invocation(0, 30_000));
    await runSweepTick(deps, invocation(0, 15 * 60_000));

    expect(store.acquireSweepLease.mock.calls).toEqual([
      ['req-1', T0, T0 + 30_000],
      ['req-1', T0, T0 + INTERVAL],
    ]);
    expect(store.releaseSweepLease.mock.calls).toEqual([['req-1'], ['req-1']]);
  });

  it('checks the table before the sweep and runs migrations after it, then releases', async () => {
    // A table with a record (schema 1): the check's read serves the migrations too.
    const table = tables({});
    const { deps } = dependencies(leaseStore(), table);

    await runSweepTick(deps, invocation());

    expect(order).toEqual(['acquire', 'schema read', 'sweep', 'migration page', 'release']);
    expect(table.stored()?.schema).toBe(2);
  });

  it('refuses a table this code cannot read before anything is swept, and releases the lease', async () => {
    const table = tables({ schema: 9, readableFrom: 9, writtenBy: '9.0.0' });
    const { deps, store } = dependencies(leaseStore(), table);

    await expect(runSweepTick(deps, invocation())).rejects.toThrow(/9\.0\.0/);

    expect(runSweep).not.toHaveBeenCalled();
    expect(store.releaseSweepLease).toHaveBeenCalledWith('req-1');
  });

  it('leaves migrations for the next run when the sweep used the time up', async () => {
    const table = tables();
    let remaining = 30_000;
    vi.mocked(runSweep).mockImplementationOnce(async () => {
      order.push('sweep');
      remaining = 1_000; // inside the 5 s margin
      return emptyResult(false);
    });
    const { deps } = dependencies(leaseStore(), table);

    await runSweepTick(deps, { ...invocation(), remainingMs: () => remaining });

    expect(order).not.toContain('migration page');
    expect(table.stored()?.schema).toBe(1);
  });

  it('records the policy and the run, and fails after the rest when some operations failed', async () => {
    sweep.result = { ...emptyResult(false), failed: 2, firstFailure: 'throttled' };
    const sweepPolicy = { record: vi.fn(async () => undefined) };
    const sweepRuns = { record: vi.fn(async () => undefined) };
    const { deps, store } = dependencies(leaseStore(), {
      sweepPolicy: sweepPolicy as unknown as SweepRunDependencies['sweepPolicy'],
      sweepRuns: sweepRuns as unknown as SweepRunDependencies['sweepRuns'],
    });

    await expect(runSweepTick(deps, invocation())).rejects.toBeInstanceOf(SweepIncompleteError);

    expect(sweepPolicy.record).toHaveBeenCalledWith(
      expect.objectContaining({ authMode: config.authMode }),
      T0,
    );
    expect(sweepRuns.record).toHaveBeenCalledWith(expect.objectContaining({ failed: 2, at: T0 }));
    expect(store.releaseSweepLease).toHaveBeenCalledWith('req-1');
  });

  it('goes on when the policy cannot be recorded, and when the lease cannot be released', async () => {
    const warned = vi.spyOn(logger, 'warn');
    const store = leaseStore();
    store.releaseSweepLease.mockRejectedValueOnce(new Error('throttled'));
    const sweepPolicy = { record: vi.fn(async () => Promise.reject(new Error('denied'))) };
    const { deps } = dependencies(store, {
      sweepPolicy: sweepPolicy as unknown as SweepRunDependencies['sweepPolicy'],
    });

    const summary = await runSweepTick(deps, invocation());

    expect(summary.mode).toBe('normal');
    expect(runSweep).toHaveBeenCalledTimes(1);
    expect(warned.mock.calls.map(([message]) => message)).toEqual([
      'could not record the sweep policy; the next run tries again',
      'could not release the sweep lease; it runs out at the deadline',
    ]);
  });

  it('sweeps with the configured deletions and fail static, and the tick the event named', async () => {
    const { deps } = dependencies();

    await runSweepTick(deps, { ...invocation(), tickAt: T0 - 5_000 });

    expect(vi.mocked(runSweep).mock.calls[0]?.[1]).toMatchObject({
      now: T0,
      tickAt: T0 - 5_000,
      maxDeletes: config.sweep.maxDeletesPerRun,
      failStatic: { sweepIntervalMs: INTERVAL },
      heartbeatLanes: 3,
      repeatHeartbeatPasses: true,
    });
  });
});

describe('a heartbeat lane tick (lane k)', () => {
  it("takes its own lane's lease, never the sweep's, and deletes nothing", async () => {
    const { deps, store } = dependencies(leaseStore(), tables());

    const summary = await runHeartbeatLaneTick(deps, invocation(2));

    expect(summary.mode).toBe('lane');
    expect(store.acquireSweepLease).toHaveBeenCalledWith('req-1', T0, T0 + 30_000, 2);
    expect(store.releaseSweepLease).toHaveBeenCalledWith('req-1', 2);
    expect(order).toEqual(['acquire', 'heartbeat lane', 'release']);
    expect(runSweep).not.toHaveBeenCalled();
    expect(vi.mocked(runHeartbeatLane).mock.calls[0]?.[1]).toMatchObject({
      maxDeletes: 0,
      heartbeatLane: 2,
    });
  });

  it('skips, idle, when another invocation of the lane holds its lease', async () => {
    const store = leaseStore({ acquired: false, holder: 'req-0', until: T0 + 20_000 });
    const { deps } = dependencies(store);

    const summary = await runHeartbeatLaneTick(deps, invocation(1));

    expect(summary).toMatchObject({ mode: 'skipped', heartbeat: { lane: 1, checked: 0 } });
    expect(runHeartbeatLane).not.toHaveBeenCalled();
  });

  it('fails its invocation, after releasing its lease, when checks failed', async () => {
    sweep.result = { ...emptyResult(false), failed: 1, firstFailure: 'gone' };
    const { deps, store } = dependencies();

    await expect(runHeartbeatLaneTick(deps, invocation(1))).rejects.toThrow(
      /heartbeat lane 1: 1 operation\(s\) failed/,
    );
    expect(store.releaseSweepLease).toHaveBeenCalledWith('req-1', 1);
  });
});
