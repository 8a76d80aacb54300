import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import type { KubeObject } from '../../lib/projection/objects.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { type RealCluster, startRealCluster } from '../fixtures/real-cluster.ts';
import { realClusterSkip } from '../fixtures/real-cluster-binaries.ts';
import { waitFor } from '../fixtures/real-cluster-processes.ts';
import { projectorKubeconfig } from '../fixtures/real-cluster-rbac.ts';
import { openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * Groups from the cluster (`npm start --group-source cluster`) against a REAL kube-apiserver,
 * as the documented projector ServiceAccount: the group sync's watch of WorkloadGroups is the
 * trigger, its periodic list (a minute here, so it cannot be what the tests see) the repair.
 * What the stand-in version (group-sync-local.test.ts) models with `expireWatchHistory`, a
 * restart of the real API server does: every watch ends, and the restarted server's watch
 * cache keeps nothing from before it started.
 */

const skipped = realClusterSkip();
const NS = 'shop';
const WG = `/apis/networking.istio.io/v1/namespaces/${NS}/workloadgroups`;

function clusterGroup(version: string): KubeObject {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: NS },
    spec: {
      metadata: { labels: { app: 'web' } },
      template: { ports: { http: 8080 }, labels: { version } },
    },
  };
}

describe.skipIf(skipped)('npm start --group-source cluster against a real kube-apiserver', () => {
  let cluster: RealCluster;
  let runtime: LocalRuntime;
  let store: RegistrarStore;
  let documents: ReturnType<typeof createDocumentClient>;
  const open: TestClient[] = [];

  beforeAll(async () => {
    cluster = await startRealCluster({ namespaces: [NS] });
    const kubeconfig = join(cluster.dir, 'projector.kubeconfig');
    await writeFile(kubeconfig, await projectorKubeconfig(cluster), { mode: 0o600 });
    runtime = await startLocalRuntime({
      port: 0,
      memory: true,
      dataDir: join(cluster.dir, 'registrar'),
      kubeconfig,
      groupSource: { kind: 'cluster' },
      // The full list is a minute away: what the tests see within seconds is the watch.
      projectionIntervalMs: 60_000,
      rolloutIntervalMs: 500,
      logLevel: 'ERROR',
    });
    documents = createDocumentClient({ region: 'us-east-1', endpoint: runtime.dynamoDbEndpoint });
    store = composeRegistry(documents, runtime.tableName);
  }, 240_000);
  afterAll(async () => {
    for (const client of open) client.socket.terminate();
    documents?.destroy();
    await runtime?.close();
    await cluster?.close();
  }, 60_000);

  const registryVersion = async () =>
    (await store.getGroup({ namespace: NS, name: 'web' }))?.group.spec.template.labels?.version;

  it('a WorkloadGroup applied to the cluster is the registry group a VM registers with, with its cluster uid', async () => {
    const applied = await cluster.must<KubeObject>('POST', WG, clusterGroup('v1'));
    await waitFor(
      'the group in the registry',
      async () => ((await registryVersion()) === 'v1' ? true : undefined),
      {
        timeoutMs: 10_000,
      },
    );
    expect((await store.getGroup({ namespace: NS, name: 'web' }))?.group.metadata.uid).toBe(
      applied.metadata.uid,
    );

    const created = createJoinToken({ namespace: NS, ttlMs: 10 * 60_000, now: Date.now() });
    await new DynamoDbTokenStore(documents, runtime.tableName).putToken(created.stored);
    open.push(
      await openClient(`${runtime.url}?group=web&namespace=${NS}&ip=10.5.0.1`, {
        Authorization: `Bearer ${created.token}`,
      }),
    );
    const entry = await waitFor(
      'the VM registered',
      async () => (await store.getEntry({ namespace: NS, name: 'web-10.5.0.1' }))?.entry,
      { timeoutMs: 10_000 },
    );
    // The registry's group is the cluster's: its uid is what projected entries will own by.
    expect(entry.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'WorkloadGroup',
      name: 'web',
      uid: applied.metadata.uid,
    });
    expect(entry.spec).toMatchObject({ labels: { app: 'web', version: 'v1' } });
  }, 120_000);

  it('follows a change made while its API server restarted, within seconds, not at the next list', async () => {
    // An HA control plane: a second API server on the same etcd takes the write while the
    // first one (the registrar's) is down.
    const peer = await cluster.startPeerApiServer();
    try {
      await cluster.stopApiServer();
      const current = await peer.must<KubeObject>('GET', `${WG}/web`);
      await peer.must('PUT', `${WG}/web`, { ...clusterGroup('v2'), metadata: current.metadata });
      await cluster.startApiServer();
      const restarted = Date.now();
      // The watch resumes from the version it last saw, which the restarted server's watch
      // cache does not hold: 410, and the sync starts over from a list. (Seen once with a log
      // line added to the loop: the watch ended, the first retry was refused 403 while the
      // restarted server's authorizer had not loaded RBAC yet, then 410, and the registry had
      // v2 0.2 s after /readyz.)
      await waitFor(
        'the change made during the restart in the registry',
        async () => ((await registryVersion()) === 'v2' ? true : undefined),
        { timeoutMs: 20_000 },
      );
      expect(Date.now() - restarted).toBeLessThan(20_000);
    } finally {
      await peer.stop();
    }
  }, 120_000);
});
