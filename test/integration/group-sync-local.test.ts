import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import type { KubeObject } from '../../lib/projection/objects.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';

/**
 * Groups from the cluster, end to end: `npm start`'s runtime with `--group-source cluster`
 * (a watch and a periodic list of the kube-apiserver stand-in; no real API server runs here),
 * real agents, and the CLI. The cluster is changed as kubectl, Argo CD or Flux would.
 */
let bed: AgentTestbed | undefined;
let api: KubeApiServerStandIn | undefined;
afterEach(async () => {
  await bed?.close();
  await api?.close();
  bed = undefined;
  api = undefined;
});

function clusterGroup(name: string, labels: Record<string, string>): KubeObject {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: {
      name,
      namespace: NAMESPACE,
      annotations: { 'workload-registrar/rollout-pace': '100%/1s' },
    },
    spec: { metadata: { labels: { app: name } }, template: { ports: { http: 8080 }, labels } },
  };
}

async function start(
  syncIntervalMs: number,
): Promise<{ testbed: AgentTestbed; api: KubeApiServerStandIn }> {
  api = await startKubeApiServerStandIn();
  const kubeconfig = join(tmpdir(), `kubeconfig-${process.pid}-${Date.now()}`);
  await writeFile(kubeconfig, api.kubeconfig);
  bed = await startAgentTestbed({
    writeLocalJson: true,
    kubeconfig,
    groupSource: { kind: 'cluster' },
    projectionIntervalMs: syncIntervalMs,
    rolloutIntervalMs: 500,
  });
  return { testbed: bed, api };
}

function registrar(testbed: AgentTestbed, args: string[], stdin?: string) {
  const localJson = testbed.runtime.localJsonPath;
  if (localJson === undefined) throw new Error('the runtime wrote no local.json');
  return captureCli(args, {
    env: { REGISTRAR_DATA_DIR: dirname(localJson) },
    ...(stdin ? { stdin } : {}),
  });
}

const group = (testbed: AgentTestbed, name = 'web') =>
  testbed.registry.getGroup({ namespace: NAMESPACE, name });

describe('npm start --group-source cluster', () => {
  it('follows the cluster: a group applied there registers VMs, a label changed there reaches them', async () => {
    const { testbed, api } = await start(60_000);
    // Only the watch can bring this within the test's time: the periodic list is a minute away.
    await waitFor(() => api.watchCount() > 0, 'the watch');
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v1' }));
    const applied = Date.now();
    await waitFor(
      async () => (await group(testbed)) !== undefined,
      'the group in the registry',
      10_000,
    );
    console.info(`cluster apply -> registry group in ${Date.now() - applied} ms (watch)`);

    const agent = await testbed.agent({ ips: ['10.5.0.1'] });
    await waitFor(
      async () => (await testbed.entry('web-10.5.0.1'))?.connected === true,
      'entry',
      15_000,
    );
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v2' }));
    const changed = Date.now();
    await waitFor(
      async () => (await testbed.entry('web-10.5.0.1'))?.we.metadata.labels?.version === 'v2',
      'the label change to reach the entry',
      15_000,
    );
    console.info(`cluster label change -> entry updated in ${Date.now() - changed} ms`);
    expect(agent.events.filter((e) => e.type === 'closed')).toEqual([]);
  });

  it('refuses registrar apply and delete of a group, naming where groups come from', async () => {
    const { testbed, api } = await start(60_000);
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v1' }));
    await waitFor(async () => (await group(testbed)) !== undefined, 'the group', 10_000);
    const yaml = [
      'apiVersion: networking.istio.io/v1',
      'kind: WorkloadGroup',
      `metadata: {name: web, namespace: ${NAMESPACE}}`,
      'spec: {template: {labels: {version: hand}}}',
      '',
    ].join('\n');
    const apply = await registrar(testbed, ['apply', '-f', '-'], yaml);
    expect(apply.code).toBe(1);
    expect(apply.stderr).toBe(
      'error: workloadgroup shop/web: groups come from the Kubernetes cluster (the registrar syncs its WorkloadGroups); apply it to the cluster (kubectl apply -f FILE, or commit it where Argo CD or Flux applies from): the registrar follows\nnothing was written\n',
    );
    expect((await group(testbed))?.group.spec.template.labels).toEqual({ version: 'v1' });
    const remove = await registrar(testbed, ['delete', 'wg', 'web', '-n', NAMESPACE]);
    expect(remove.code).toBe(1);
    expect(remove.stderr).toContain(
      'delete it from the cluster (kubectl delete workloadgroup web -n shop)',
    );
    expect(remove.stderr).toContain('nothing was deleted');
    expect(await group(testbed)).toBeDefined();
  });

  it('a group deleted in the cluster takes its entries along and the agents are told', async () => {
    const { testbed, api } = await start(60_000);
    api.put('WorkloadGroup', clusterGroup('web', {}));
    api.put('WorkloadGroup', clusterGroup('db', {}));
    await waitFor(async () => (await group(testbed, 'db')) !== undefined, 'the groups', 10_000);
    const agent = await testbed.agent({ ips: ['10.5.1.1'] });
    await waitFor(
      async () => (await testbed.entry('web-10.5.1.1'))?.connected === true,
      'entry',
      15_000,
    );

    api.remove('WorkloadGroup', NAMESPACE, 'web');
    await waitFor(async () => (await group(testbed)) === undefined, 'the group removed', 15_000);
    await waitFor(
      async () => (await testbed.entry('web-10.5.1.1')) === undefined,
      'the entry',
      15_000,
    );
    await waitFor(() => agent.events.some((e) => e.type === 'closed'), 'the agent told', 10_000);
    // It retries and is refused while the group is missing, as after `registrar delete wg`.
    expect(await group(testbed, 'db')).toBeDefined();
  });

  it('repairs a lost watch event with the periodic list', async () => {
    const { testbed, api } = await start(1_500);
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v1' }));
    await waitFor(async () => (await group(testbed)) !== undefined, 'the group', 10_000);
    api.muteWatches(true);
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v2' }));
    await waitFor(
      async () => (await group(testbed))?.group.spec.template.labels?.version === 'v2',
      'the periodic list to repair it',
      10_000,
    );
  });

  it('starts over from a list when the watch can no longer resume (410)', async () => {
    const { testbed, api } = await start(60_000);
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v1' }));
    await waitFor(async () => (await group(testbed)) !== undefined, 'the group', 10_000);
    // The change is never delivered to the open watch, and the history it would resume from is
    // compacted: only a fresh list finds it (the periodic one is a minute away).
    api.muteWatches(true);
    api.put('WorkloadGroup', clusterGroup('web', { version: 'v2' }));
    api.expireWatchHistory();
    api.muteWatches(false);
    api.dropWatches();
    await waitFor(
      async () => (await group(testbed))?.group.spec.template.labels?.version === 'v2',
      'the relist after 410',
      10_000,
    );
  });
});
