import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutStore } from '../../lib/rollout/rollout-store.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { instrumented, NS, type RolloutBed, rolloutBed } from '../fixtures/rollout-bed.ts';

/**
 * Template rollouts over real dynalite, through the real connect use case and the real rollout
 * run, on a manual clock: a template change reaches every live entry built from it, paced,
 * with the agent's labels still winning, the connection state untouched, and each write
 * conditional on the revision read.
 */
let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

const FAST = { 'workload-registrar/rollout-pace': '100%/1s' };

async function labelsOf(bed: RolloutBed, name: string) {
  const record = await bed.registry.getEntry({ namespace: NS, name });
  return record?.entry.metadata.labels;
}

describe('a template change reaches the live entries', () => {
  it('brings every entry to the new labels, ports and weight; the agent still wins; no holder changes', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    await bed.applyGroup({ labels: { version: 'v1' } }, FAST);
    await bed.connect('10.0.0.1');
    await bed.connect('10.0.0.2', { version: 'canary', rack: 'r7' });
    const before = await bed.registry.getEntry({ namespace: NS, name: 'web-10.0.0.2' });

    await bed.applyGroup(
      { labels: { version: 'v2', tier: 'front' }, ports: { http: 9090 }, weight: 3 },
      FAST,
    );
    const summary = await bed.run();

    expect(summary.updated).toBe(2);
    expect(summary.completed).toEqual([{ group: `${NS}/web`, generation: 2 }]);
    expect(await labelsOf(bed, 'web-10.0.0.1')).toEqual({
      app: 'web',
      version: 'v2',
      tier: 'front',
    });
    // The agent's own labels win over the template's, as at registration.
    expect(await labelsOf(bed, 'web-10.0.0.2')).toEqual({
      app: 'web',
      version: 'canary',
      tier: 'front',
      rack: 'r7',
    });
    const after = await bed.registry.getEntry({ namespace: NS, name: 'web-10.0.0.2' });
    expect(after?.entry.spec).toMatchObject({
      ports: { http: 9090 },
      weight: 3,
      address: '10.0.0.2',
    });
    expect(after?.entry.spec.labels).toEqual(after?.entry.metadata.labels);
    expect(after?.groupGeneration).toBe(2);
    expect(after?.connection).toEqual(before?.connection);
    expect(after?.revision).toBe((before?.revision ?? 0) + 1);
    expect(after?.entry.metadata.creationTimestamp).toBe(before?.entry.metadata.creationTimestamp);
    // The same write recorded the entry's event: what changed, from which generation.
    expect(after?.events?.at(-1)).toMatchObject({
      reason: 'TemplateUpdated',
      from: 'rollout',
      message:
        'WorkloadGroup web generation 1 -> 2 applied to the live entry (labels, ports, weight)',
    });
  });

  it('does nothing when no template changed, and reads no entry for a finished rollout', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    await bed.applyGroup({ labels: { version: 'v1' } }, FAST);
    await bed.connect('10.0.1.1');
    const first = await bed.run();
    expect(first.updated).toBe(0);
    let reads = 0;
    const counting = instrumented(bed.rollouts, {
      outdatedEntries: (...args: Parameters<RolloutStore['outdatedEntries']>) => {
        reads += 1;
        return bed.rollouts.outdatedEntries(...args);
      },
    });
    const second = await bed.run({}, counting);
    expect(second).toMatchObject({ updated: 0, completed: [] });
    expect(reads).toBe(0);
  });

  it('keeps the service account and network of live entries, and counts them as on an older template', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    await bed.applyGroup({ labels: { version: 'v1' } }, FAST);
    await bed.connect('10.0.2.1');
    await bed.applyGroup({ labels: { version: 'v2' }, serviceAccount: 'api', network: 'n2' }, FAST);
    await bed.run();
    const record = await bed.registry.getEntry({ namespace: NS, name: 'web-10.0.2.1' });
    expect(record?.entry.spec.serviceAccount).toBeUndefined();
    expect(record?.entry.spec.network).toBeUndefined();
    expect(record?.entry.metadata.labels).toEqual({ app: 'web', version: 'v2' });
  });
});

describe('pacing', () => {
  it('writes a step of entries per interval (2 every 10 s): 6 of 10 by 25 s', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    await bed.applyGroup(
      { labels: { version: 'v1' } },
      { 'workload-registrar/rollout-pace': '2/10s' },
    );
    for (let i = 1; i <= 10; i++) await bed.connect(`10.0.3.${i}`);
    await bed.applyGroup(
      { labels: { version: 'v2' } },
      { 'workload-registrar/rollout-pace': '2/10s' },
    );
    const started = bed.clock.now;
    const first = await bed.run({ deadline: started + 25_000 });
    expect(first.updated).toBe(6);
    expect(first.stoppedEarly).toBe(true);
    // The next run continues from the saved cursor and step.
    const second = await bed.run({ deadline: bed.clock.now + 60_000 });
    expect(second.updated).toBe(4);
    expect(bed.clock.now - started).toBeGreaterThanOrEqual(40_000);
    const record = await bed.rollouts.getRollout({ namespace: NS, name: 'web' });
    expect(record).toMatchObject({ generation: 2, updated: 10, total: 10 });
    expect(record?.completedAt).toBeDefined();
  });

  it('a share of the group per step: 25% of 8 is 2 per step', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    const pace = { 'workload-registrar/rollout-pace': '25%/5s' };
    await bed.applyGroup({ labels: { version: 'v1' } }, pace);
    for (let i = 1; i <= 8; i++) await bed.connect(`10.0.4.${i}`);
    await bed.applyGroup({ labels: { version: 'v2' } }, pace);
    const run = await bed.run({ deadline: bed.clock.now + 7_000 });
    expect(run.updated).toBe(4);
  });

  it('holds the entry writes under the rate ceiling of a run', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    await bed.applyGroup({ labels: { version: 'v1' } }, FAST);
    for (let i = 1; i <= 20; i++) await bed.connect(`10.0.5.${i}`);
    await bed.applyGroup({ labels: { version: 'v2' } }, FAST);
    const started = bed.clock.now;
    const run = await bed.run({ writesPerSecond: 10 });
    expect(run.updated).toBe(20);
    // 20 writes at 10/s: the last starts 1.9 s after the first.
    expect(bed.clock.now - started).toBeGreaterThanOrEqual(1_900);
  });
});

describe('pause and resume', () => {
  it('writes nothing while paused, and goes on after resume', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    const ref = { namespace: NS, name: 'web' };
    await bed.applyGroup({ labels: { version: 'v1' } }, FAST);
    await bed.connect('10.0.6.1');
    await bed.connect('10.0.6.2');
    await bed.rollouts.setPaused(ref, bed.clock.now);
    await bed.applyGroup({ labels: { version: 'v2' } }, FAST);
    const paused = await bed.run();
    expect(paused).toMatchObject({ updated: 0, paused: [`${NS}/web`] });
    expect(await labelsOf(bed, 'web-10.0.6.1')).toEqual({ app: 'web', version: 'v1' });
    // The record already names the new target, so status can say what waits.
    expect((await bed.rollouts.getRollout(ref))?.generation).toBe(2);

    await bed.rollouts.setPaused(ref, undefined);
    const resumed = await bed.run();
    expect(resumed.updated).toBe(2);
    expect(await labelsOf(bed, 'web-10.0.6.2')).toEqual({ app: 'web', version: 'v2' });
  });
});

describe('entries of an earlier release', () => {
  it('are left alone until their agent reconnects, then follow on the next recheck', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    await bed.applyGroup({ labels: { version: 'v1' } }, FAST);
    // Written as the previous release's connect wrote it: no record of what the agent gave.
    const legacy = connectChange({
      name: 'web-10.0.7.1',
      namespace: NS,
      connectionId: 'old-1',
      connectedAt: bed.clock.now,
    });
    legacy.entry.metadata.labels = { app: 'web', version: 'v1', owner: 'team-a' };
    legacy.entry.spec.labels = { app: 'web', version: 'v1', owner: 'team-a' };
    expect(await bed.registry.connect(legacy)).toBe('created');
    await bed.applyGroup({ labels: { version: 'v2' } }, FAST);

    const first = await bed.run();
    expect(first).toMatchObject({ updated: 0, waiting: 1 });
    expect(await labelsOf(bed, 'web-10.0.7.1')).toEqual({
      app: 'web',
      version: 'v1',
      owner: 'team-a',
    });

    // The agent's rotation reconnects it through this release's connect: what it gives is recorded.
    bed.clock.now += 1_000;
    await bed.registry.connect({
      ...legacy,
      connectionId: 'new-1',
      connectedAt: bed.clock.now,
      agentGiven: { labels: { owner: 'team-a' } },
    });
    const early = await bed.run();
    expect(early.updated).toBe(0); // the recheck is not due yet
    bed.clock.now += 300_000;
    const recheck = await bed.run();
    expect(recheck).toMatchObject({ updated: 1, waiting: 0 });
    expect(await labelsOf(bed, 'web-10.0.7.1')).toEqual({
      app: 'web',
      version: 'v2',
      owner: 'team-a',
    });
  });

  it('a reconnect never replaces what the agent gave at its first connect', async () => {
    const bed = await rolloutBed(dynamo.endpoint);
    await bed.applyGroup({ labels: { version: 'v1' } }, FAST);
    await bed.connect('10.0.8.1', { rack: 'r1' });
    await bed.connect('10.0.8.1', { rack: 'r2' });
    const entry = await bed.rollouts.getRolloutEntry({ namespace: NS, name: 'web-10.0.8.1' });
    expect(entry?.agentGiven).toEqual({ labels: { rack: 'r1' } });
  });
});
