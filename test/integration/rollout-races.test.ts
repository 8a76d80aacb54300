import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeGroupEntries } from '../../lib/registration/remove-group-entries.ts';
import type { RolloutEntry, RolloutStore } from '../../lib/rollout/rollout-store.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { instrumented, NS, type RolloutBed, rolloutBed } from '../fixtures/rollout-bed.ts';

/**
 * What the other writers of an entry do to a rollout that races them, over real dynalite: each
 * rollout write is one UpdateItem conditional on the revision it read, so a connect, a health
 * report or a delete that lands between the read and the write wins, and the rollout re-reads
 * (or, for a deleted entry, does nothing). And what lost, late or duplicated work does: a run
 * that dies midway, a group changed twice before a run, an apply during a run, a group
 * deleted during a run.
 */
let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

const PACE = { 'workload-registrar/rollout-pace': '100%/1s' };
const GROUP = { namespace: NS, name: 'web' };

async function bedWith(ips: string[]): Promise<RolloutBed> {
  const bed = await rolloutBed(dynamo.endpoint);
  await bed.applyGroup({ labels: { version: 'v1' } }, PACE);
  for (const ip of ips) await bed.connect(ip);
  return bed;
}

/** The store, with `before` run once just before the rollout's first write to `name`. */
function beforeFirstWrite(bed: RolloutBed, name: string, before: () => Promise<void>) {
  let done = false;
  const writes: string[] = [];
  const store = instrumented(bed.rollouts, {
    rollOutEntry: async (read: RolloutEntry, ...rest) => {
      if (read.ref.name === name && !done) {
        done = true;
        await before();
      }
      const outcome = await bed.rollouts.rollOutEntry(read, ...rest);
      writes.push(`${read.ref.name}:${outcome}`);
      return outcome;
    },
  });
  return { store, writes };
}

describe('a rollout write racing another writer of the entry', () => {
  it('loses to a health report, re-reads, and writes again: both changes stay', async () => {
    const bed = await bedWith(['10.1.0.1']);
    const name = 'web-10.1.0.1';
    await bed.applyGroup({ labels: { version: 'v2' } }, PACE);
    const { store, writes } = beforeFirstWrite(bed, name, async () => {
      expect(
        await bed.registry.reportHealth({
          connectionId: 'conn-1',
          entry: { namespace: NS, name },
          healthy: false,
          message: 'probe failed',
          at: bed.clock.now + 5,
        }),
      ).toBe('transitioned');
    });
    const run = await bed.run({}, store);
    expect(writes).toEqual([`${name}:conflict`, `${name}:updated`]);
    expect(run).toMatchObject({ updated: 1, conflicts: 1 });
    const record = await bed.registry.getEntry({ namespace: NS, name });
    expect(record?.entry.metadata.labels).toEqual({ app: 'web', version: 'v2' });
    expect(record?.health).toMatchObject({ status: 'False', message: 'probe failed' });
  });

  it('loses to a reconnect (a rotation), re-reads, and writes again: both holders stay', async () => {
    const bed = await bedWith(['10.1.1.1']);
    const name = 'web-10.1.1.1';
    await bed.applyGroup({ labels: { version: 'v2' } }, PACE);
    const { store, writes } = beforeFirstWrite(bed, name, async () => {
      await bed.connect('10.1.1.1', {}, 'rotated-2');
    });
    await bed.run({}, store);
    expect(writes).toEqual([`${name}:conflict`, `${name}:updated`]);
    const record = await bed.registry.getEntry({ namespace: NS, name });
    expect(record?.connection?.connectionIds).toEqual(['conn-1', 'rotated-2']);
    expect(record?.entry.metadata.labels).toEqual({ app: 'web', version: 'v2' });
    expect(record?.groupGeneration).toBe(2);
  });

  it('loses to a delete and never brings the entry back', async () => {
    const bed = await bedWith(['10.1.2.1', '10.1.2.2']);
    const name = 'web-10.1.2.1';
    await bed.applyGroup({ labels: { version: 'v2' } }, PACE);
    const { store, writes } = beforeFirstWrite(bed, name, async () => {
      expect(await bed.registry.removeEntry({ namespace: NS, name })).toBeDefined();
    });
    const run = await bed.run({}, store);
    expect(writes).toContain(`${name}:conflict`);
    expect(writes).not.toContain(`${name}:updated`);
    expect(run.updated).toBe(1);
    expect(await bed.registry.getEntry({ namespace: NS, name })).toBeUndefined();
    expect((await bed.rollouts.getRollout(GROUP))?.completedAt).toBeDefined();
  });

  it('gives an entry that keeps changing to the next pass, which updates it', async () => {
    const bed = await bedWith(['10.1.3.1']);
    const name = 'web-10.1.3.1';
    await bed.applyGroup({ labels: { version: 'v2' } }, PACE);
    let health = 0;
    let lostRaces = 0;
    const store = instrumented(bed.rollouts, {
      rollOutEntry: async (read, ...rest) => {
        // A health report lands before each of the first three writes of the first pass.
        if (lostRaces < 3) {
          lostRaces += 1;
          await bed.registry.reportHealth({
            connectionId: 'conn-1',
            entry: { namespace: NS, name },
            healthy: health++ % 2 === 0,
            at: bed.clock.now + health,
          });
        }
        return bed.rollouts.rollOutEntry(read, ...rest);
      },
    });
    const run = await bed.run({}, store);
    expect(run.conflicts).toBe(3);
    expect(run.updated).toBe(1);
    expect((await bed.registry.getEntry({ namespace: NS, name }))?.groupGeneration).toBe(2);
  });
});

describe('lost, late and repeated work', () => {
  it('a run that dies midway is resumed by the next; each entry is written once', async () => {
    const ips = Array.from({ length: 12 }, (_, i) => `10.2.0.${i + 1}`);
    const bed = await bedWith(ips);
    await bed.applyGroup({ labels: { version: 'v2' } }, PACE);
    const updated: string[] = [];
    const dying = instrumented(bed.rollouts, {
      rollOutEntry: async (read, ...rest) => {
        if (updated.length === 7) throw new Error('the function was killed');
        const outcome = await bed.rollouts.rollOutEntry(read, ...rest);
        if (outcome === 'updated') updated.push(read.ref.name);
        return outcome;
      },
    });
    await expect(bed.run({ pageSize: 5, concurrency: 1 }, dying)).rejects.toThrow('killed');
    expect(updated).toHaveLength(7);
    // Pages of 5: the first page was saved; the second died after its second write.
    expect((await bed.rollouts.getRollout(GROUP))?.cursor).toBeDefined();

    const counting = instrumented(bed.rollouts, {
      rollOutEntry: async (read, ...rest) => {
        const outcome = await bed.rollouts.rollOutEntry(read, ...rest);
        if (outcome === 'updated') updated.push(read.ref.name);
        return outcome;
      },
    });
    const resumed = await bed.run({ pageSize: 5 }, counting);
    expect(resumed.completed).toHaveLength(1);
    expect(updated.sort()).toEqual(ips.map((ip) => `web-${ip}`).sort());
    for (const ip of ips) {
      const record = await bed.registry.getEntry({ namespace: NS, name: `web-${ip}` });
      expect(record?.groupGeneration).toBe(2);
    }
  });

  it('a group changed twice before a run is rolled out once, to the last template', async () => {
    const bed = await bedWith(['10.2.1.1', '10.2.1.2']);
    await bed.applyGroup({ labels: { version: 'v2' } }, PACE);
    await bed.applyGroup({ labels: { version: 'v3' } }, PACE);
    const run = await bed.run();
    expect(run.updated).toBe(2);
    expect(run.completed).toEqual([{ group: `${NS}/web`, generation: 3 }]);
    const record = await bed.registry.getEntry({ namespace: NS, name: 'web-10.2.1.2' });
    expect(record?.entry.metadata.labels).toEqual({ app: 'web', version: 'v3' });
  });

  it('an apply that lands during a run changes the target; every entry ends on the newest', async () => {
    const ips = Array.from({ length: 6 }, (_, i) => `10.2.2.${i + 1}`);
    const bed = await bedWith(ips);
    await bed.applyGroup({ labels: { version: 'v2' } }, PACE);
    let pages = 0;
    const store = instrumented(bed.rollouts, {
      outdatedEntries: async (...args: Parameters<RolloutStore['outdatedEntries']>) => {
        pages += 1;
        // After the first page was written: an operator applies again.
        if (pages === 2) await bed.applyGroup({ labels: { version: 'v3' } }, PACE);
        return bed.rollouts.outdatedEntries(...args);
      },
    });
    await bed.run({ pageSize: 3 }, store);
    for (const ip of ips) {
      const record = await bed.registry.getEntry({ namespace: NS, name: `web-${ip}` });
      expect(record?.groupGeneration).toBe(3);
      expect(record?.entry.metadata.labels).toEqual({ app: 'web', version: 'v3' });
    }
    expect(await bed.rollouts.getRollout(GROUP)).toMatchObject({ generation: 3 });
  });

  it('a group deleted during a run ends its rollout; no entry comes back', async () => {
    const ips = Array.from({ length: 6 }, (_, i) => `10.2.3.${i + 1}`);
    const bed = await bedWith(ips);
    await bed.applyGroup({ labels: { version: 'v2' } }, PACE);
    let pages = 0;
    const store = instrumented(bed.rollouts, {
      outdatedEntries: async (...args: Parameters<RolloutStore['outdatedEntries']>) => {
        const page = await bed.rollouts.outdatedEntries(...args);
        pages += 1;
        if (pages === 2) {
          // `registrar delete wg` between reading the page and writing it.
          await bed.registry.deleteGroup(GROUP);
          await removeGroupEntries(bed.registry, GROUP, { at: bed.clock.now });
        }
        return page;
      },
    });
    const run = await bed.run({ pageSize: 3 }, store);
    expect(run.updated).toBe(3);
    expect(await bed.registry.listEntries(NS)).toEqual([]);
    // The next run finds the group gone and forgets its rollout.
    await bed.run();
    expect(await bed.rollouts.getRollout(GROUP)).toBeUndefined();
  });
});
