import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkGroupDrift } from '../../lib/projection/group-drift.ts';
import { EMPTY_LISTING_HOLD_MS, syncGroups } from '../../lib/projection/group-sync.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import type { KubeObject } from '../../lib/projection/objects.ts';
import { processGroupRemovals } from '../../lib/rollout/group-removals.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { NS, type RolloutBed, rolloutBed } from '../fixtures/rollout-bed.ts';

/**
 * Groups from the cluster: the group sync over real dynalite and the kube-apiserver stand-in
 * (no real API server runs here), and the removal of groups deleted in the cluster, as the
 * rollout function runs it. The clock is manual.
 */
let dynamo: TestDynamo;
let api: KubeApiServerStandIn;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});
afterEach(async () => {
  await api?.close();
});

function clusterGroup(
  name: string,
  labels: Record<string, string>,
  extra: Partial<KubeObject['metadata']> = {},
): KubeObject {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name, namespace: NS, ...extra },
    spec: { metadata: { labels: { app: name } }, template: { ports: { http: 8080 }, labels } },
  };
}

async function setup(): Promise<{
  bed: RolloutBed;
  sync: (selector?: string, dryRun?: boolean) => ReturnType<typeof syncGroups>;
}> {
  api = await startKubeApiServerStandIn();
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  const cluster = createKubernetesCluster(config);
  const bed = await rolloutBed(dynamo.endpoint);
  return {
    bed,
    sync: (selector, dryRun) =>
      syncGroups(
        { cluster, registry: bed.registry, rollouts: bed.rollouts },
        { ...(selector ? { selector } : {}), ...(dryRun ? { dryRun } : {}), now: bed.clock.now },
      ),
  };
}

function removals(bed: RolloutBed, closed: string[]) {
  return async () =>
    processGroupRemovals(
      {
        store: bed.rollouts,
        catalog: bed.registry,
        closeConnections: async (ids) => {
          closed.push(...ids);
          return { closed: ids.length, failed: 0 };
        },
        groupsFromCluster: true,
        now: () => bed.clock.now,
      },
      await bed.rollouts.listRollouts(),
    );
}

describe('the group sync', () => {
  it("creates the cluster groups in the registry with their uid, and leaves kubectl's copy out", async () => {
    const { bed, sync } = await setup();
    const put = api.put(
      'WorkloadGroup',
      clusterGroup(
        'web',
        { version: 'v1' },
        {
          annotations: {
            'kubectl.kubernetes.io/last-applied-configuration': '{"a":1}',
            team: 'shop',
          },
        },
      ),
    );
    const report = await sync();
    expect(report).toMatchObject({
      created: [`${NS}/web`],
      updated: [],
      removing: [],
      problems: [],
    });
    const stored = await bed.registry.getGroup({ namespace: NS, name: 'web' });
    expect(stored?.group.metadata.uid).toBe(put.metadata.uid);
    expect(stored?.group.metadata.annotations).toEqual({ team: 'shop' });
    expect(stored?.group.spec.template.labels).toEqual({ version: 'v1' });
    expect(stored?.generation).toBe(1);
  });

  it('applies a change (a new generation, which then rolls out) and writes nothing when nothing changed', async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v1' }));
    await sync();
    expect(await sync()).toMatchObject({ created: [], updated: [], unchanged: 1 });
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v2' }));
    expect(await sync()).toMatchObject({ updated: [`${NS}/web`] });
    expect((await bed.registry.getGroup({ namespace: NS, name: 'web' }))?.generation).toBe(2);
  });

  it('syncs only the groups the selector picks', async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', {}, { labels: { registrar: 'on' } }));
    api.put('WorkloadGroup', clusterGroup('db', {}));
    expect((await sync('registrar=on')).created).toEqual([`${NS}/web`]);
    expect(await bed.registry.getGroup({ namespace: NS, name: 'db' })).toBeUndefined();
  });

  it("reports a cluster group the registry cannot take, keeps the registry's copy, and never removes it for that", async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v1' }));
    await sync();
    api.put('WorkloadGroup', clusterGroup('web', { 'bad label!': 'x' }));
    const report = await sync();
    expect(report.problems).toEqual([
      { group: `${NS}/web`, message: expect.stringContaining('spec.template.labels') },
    ]);
    expect(report.removing).toEqual([]);
    expect(
      (await bed.registry.getGroup({ namespace: NS, name: 'web' }))?.group.spec.template.labels,
    ).toEqual({
      version: 'v1',
    });
  });

  it('writes nothing in a dry run', async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', {}));
    expect((await sync(undefined, true)).created).toEqual([`${NS}/web`]);
    expect(await bed.registry.listGroups(NS)).toEqual([]);
  });
});

describe('a group deleted in the cluster', () => {
  it('is removed with the entries it registered, and their connections are closed; a repeat does nothing', async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', {}));
    api.put('WorkloadGroup', clusterGroup('db', {}));
    await sync();
    const connection = await bed.connect('10.4.0.1');
    api.remove('WorkloadGroup', NS, 'web');
    expect((await sync()).removing).toEqual([`${NS}/web`]);
    // The projector only asks: the group is still there until the rollout function runs.
    expect(await bed.registry.getGroup({ namespace: NS, name: 'web' })).toBeDefined();

    const closed: string[] = [];
    const removed = await removals(bed, closed)();
    expect(removed.removed).toEqual([{ group: `${NS}/web`, entries: 1 }]);
    expect(closed).toEqual([connection]);
    expect(await bed.registry.getGroup({ namespace: NS, name: 'web' })).toBeUndefined();
    expect(await bed.registry.getEntry({ namespace: NS, name: 'web-10.4.0.1' })).toBeUndefined();
    // Why the VM left the mesh has an answer: its history names the group and the cluster.
    const [history] = await bed.registry.deletedEntries(NS, 'web-10.4.0.1', bed.clock.now);
    expect(history?.events.at(-1)).toMatchObject({
      reason: 'Deleted',
      message: expect.stringContaining('its WorkloadGroup was deleted in the Kubernetes cluster'),
    });
    expect(await bed.registry.getGroup({ namespace: NS, name: 'db' })).toBeDefined();
    expect((await removals(bed, closed)()).removed).toEqual([]);
    expect((await sync()).removing).toEqual([]);
  });

  it('is kept when it comes back before the removal ran', async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', {}));
    api.put('WorkloadGroup', clusterGroup('db', {}));
    await sync();
    api.remove('WorkloadGroup', NS, 'web');
    await sync();
    api.put('WorkloadGroup', clusterGroup('web', {}));
    expect((await sync()).kept).toEqual([`${NS}/web`]);
    const result = await removals(bed, [])();
    expect(result.removed).toEqual([]);
    expect(await bed.registry.getGroup({ namespace: NS, name: 'web' })).toBeDefined();
  });

  it("is kept when the registry's group changed after the removal was asked (another generation)", async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', {}));
    api.put('WorkloadGroup', clusterGroup('db', {}));
    await sync();
    api.remove('WorkloadGroup', NS, 'web');
    await sync();
    await bed.applyGroup({ labels: { version: 'v9' } });
    const result = await removals(bed, [])();
    expect(result).toMatchObject({ removed: [], withdrawn: [`${NS}/web`] });
    expect(await bed.registry.getGroup({ namespace: NS, name: 'web' })).toBeDefined();
  });

  it('an empty listing holds every removal for the hold time, and a group back meanwhile stays', async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', {}));
    api.put('WorkloadGroup', clusterGroup('db', {}));
    await sync();
    await bed.connect('10.4.1.1');
    api.remove('WorkloadGroup', NS, 'web');
    api.remove('WorkloadGroup', NS, 'db');
    const report = await sync();
    expect(report.problems).toEqual([
      { group: '*', message: expect.stringContaining('the cluster lists no WorkloadGroup') },
    ]);
    expect((await removals(bed, [])()).held.sort()).toEqual([`${NS}/db`, `${NS}/web`]);
    expect(await bed.registry.getEntry({ namespace: NS, name: 'web-10.4.1.1' })).toBeDefined();

    api.put('WorkloadGroup', clusterGroup('web', {}));
    bed.clock.now += 60_000;
    const back = await sync();
    expect(back.kept).toEqual([`${NS}/web`]);
    // The list is not empty any more: db's removal need not wait.
    expect((await removals(bed, [])()).removed).toEqual([{ group: `${NS}/db`, entries: 0 }]);
    expect(await bed.registry.getGroup({ namespace: NS, name: 'web' })).toBeDefined();
  });

  it('with the last group deleted in the cluster, removes it once the hold has passed', async () => {
    const { bed, sync } = await setup();
    api.put('WorkloadGroup', clusterGroup('web', {}));
    await sync();
    api.remove('WorkloadGroup', NS, 'web');
    await sync();
    expect((await removals(bed, [])()).held).toEqual([`${NS}/web`]);
    bed.clock.now += EMPTY_LISTING_HOLD_MS;
    expect((await removals(bed, [])()).removed).toEqual([{ group: `${NS}/web`, entries: 0 }]);
  });
});

describe('groups from the registry: drift of the cluster copies', () => {
  it('reports a cluster copy that differs, and one the registry does not have', async () => {
    const { bed } = await setup();
    await bed.applyGroup({ labels: { version: 'v1' } });
    api.put('WorkloadGroup', {
      ...clusterGroup('web', { version: 'v2' }),
      spec: {
        metadata: { labels: { app: 'web' } },
        template: { ports: { http: 8080 }, labels: { version: 'v2' } },
      },
    });
    api.put('WorkloadGroup', clusterGroup('db', {}));
    const config = new KubeConfig();
    config.loadFromString(api.kubeconfig);
    const drift = await checkGroupDrift(bed.registry, createKubernetesCluster(config));
    expect(drift).toEqual([
      { group: `${NS}/db`, kind: 'cluster-only', fields: [] },
      { group: `${NS}/web`, kind: 'differs', fields: ['spec.template'] },
    ]);
  });
});
