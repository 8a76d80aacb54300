import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProjectHandler } from '../../functions/project.ts';
import type { GroupSource } from '../../lib/domain/group-source.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import type { KubeObject } from '../../lib/projection/objects.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { DynamoDbGroupSource } from '../../lib/store/dynamodb-group-source.ts';
import { composeRollouts } from '../../lib/wiring/rollouts.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';

/**
 * The projector function's group side (real dynalite, the kube-apiserver stand-in): with
 * groups from the cluster its schedules sync them, the group sync's own event doing nothing
 * else; with groups from the registry `registrar project` reports a cluster copy that drifted.
 */
let dynamo: TestDynamo;
let api: KubeApiServerStandIn | undefined;
beforeAll(async () => {
  dynamo = await startTestDynamo();
  return () => dynamo.close();
});
afterEach(async () => {
  await api?.close();
  api = undefined;
});

function clusterGroup(name: string, version: string): KubeObject {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name, namespace: 'shop' },
    spec: { template: { ports: { http: 8080 }, labels: { version } } },
  };
}

async function setup(source: GroupSource) {
  api = await startKubeApiServerStandIn();
  const stand = api;
  const { store, client, tableName } = await freshRegistry(dynamo.endpoint, 'projector-groups');
  const config = new KubeConfig();
  config.loadFromString(stand.kubeconfig);
  const cluster = createKubernetesCluster(config);
  const handler = createProjectHandler({
    store,
    connect: async () => cluster,
    targets: ['istio'],
    groups: {
      source,
      registry: store,
      rollouts: composeRollouts(client, tableName),
      now: () => Date.now(),
    },
  });
  return { store, client, tableName, handler, api: stand };
}

const group = (store: RegistrarStore, name = 'web') => store.getGroup({ namespace: 'shop', name });

describe('the projector with groups from the cluster', () => {
  it('syncs the groups on its full reconcile schedule, before projecting', async () => {
    const { store, handler, api } = await setup({ kind: 'cluster' });
    api.put('WorkloadGroup', clusterGroup('web', 'v1'));
    await handler({}, lambdaContext('project'));
    expect((await group(store))?.group.spec.template.labels).toEqual({ version: 'v1' });
  });

  it('on its group sync event, syncs and lists nothing else', async () => {
    const { store, handler, api } = await setup({ kind: 'cluster' });
    api.put('WorkloadGroup', clusterGroup('web', 'v1'));
    api.resetRequests();
    await handler({ groupSync: true }, lambdaContext('project'));
    expect((await group(store))?.generation).toBe(1);
    expect(api.lists().map((request) => request.path)).toEqual([
      '/apis/networking.istio.io/v1/workloadgroups',
    ]);
  });
});

describe('groups from the registry: drift', () => {
  it('registrar project reports a cluster copy that differs and writes nothing to either side', async () => {
    const { store, client, tableName, api } = await setup({ kind: 'registry' });
    await store.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { template: { ports: { http: 8080 }, labels: { version: 'v1' } } },
    });
    api.put('WorkloadGroup', clusterGroup('web', 'edited-with-kubectl'));
    // The registrar runs with groups from the registry (recorded as the rollout function does).
    await new DynamoDbGroupSource(client, tableName).record({ kind: 'registry' }, Date.now());
    const dir = await mkdtemp(join(tmpdir(), 'drift-'));
    await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
    const run = await captureCli(
      ['project', '--kubeconfig', join(dir, 'kubeconfig'), '--dry-run'],
      {
        env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: tableName },
        cwd: dir,
      },
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      "drift WorkloadGroup shop/web: the cluster's copy differs from the registry's (spec.template); the registry's is used: registrar apply the change, or run with groupSource=cluster\n",
    );
    expect((await group(store))?.group.spec.template.labels).toEqual({ version: 'v1' });
    expect(api.object('WorkloadGroup', 'shop', 'web')?.spec).toEqual(
      clusterGroup('web', 'edited-with-kubectl').spec,
    );
  });
});
