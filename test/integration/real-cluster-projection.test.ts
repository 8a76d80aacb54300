import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
import { type WatchEvent, WatchExpiredError } from '../../lib/projection/cluster.ts';
import {
  clusterAnnotations,
  ISTIOD_CONTROLLER_KEYS,
} from '../../lib/projection/istiod-coexistence.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import type { KubeObject } from '../../lib/projection/objects.ts';
import { reconcile } from '../../lib/projection/projector.ts';
import { entryRecord, MemoryCatalog, T0 } from '../fixtures/projection-records.ts';
import { type RealCluster, startRealCluster } from '../fixtures/real-cluster.ts';
import { realClusterSkip } from '../fixtures/real-cluster-binaries.ts';
import {
  documentedProjectorRole,
  PROJECTOR_ROLE,
  projectorKubeconfig,
} from '../fixtures/real-cluster-rbac.ts';

/**
 * The projector against a REAL kube-apiserver (k8s.io/kubernetes, with etcd) serving Istio's
 * real CRDs, both built from the modules pinned in test/real-cluster/ (test/fixtures/
 * real-cluster.ts): what the stand-in (kube-apiserver-stand-in.ts) only models is checked here
 * against the server itself: optimistic concurrency, the status subresource, the CRDs' schema
 * and CEL validation, RBAC, watches and their 410. The projector authenticates as a
 * ServiceAccount bound to exactly the ClusterRole docs/kubernetes.md ships.
 */

const skipped = realClusterSkip();
const NS = 'shop';
const WE = `/apis/networking.istio.io/v1/namespaces/${NS}/workloadentries`;
const WG = `/apis/networking.istio.io/v1/namespaces/${NS}/workloadgroups`;

let cluster: RealCluster;
let projectorConfig: string;
let catalog: MemoryCatalog;

function projectorCluster() {
  const config = new KubeConfig();
  config.loadFromString(projectorConfig);
  return createKubernetesCluster(config);
}

function project() {
  return reconcile({ store: catalog, cluster: projectorCluster() }, { targets: ['istio'] });
}

async function stored(name: string): Promise<KubeObject | undefined> {
  const reply = await cluster.request<KubeObject>('GET', `${WE}/${name}`);
  return reply.status === 404 ? undefined : reply.body;
}

describe.skipIf(skipped)('the projector against a real kube-apiserver', () => {
  beforeAll(async () => {
    cluster = await startRealCluster({ namespaces: [NS] });
    projectorConfig = await projectorKubeconfig(cluster);
  }, 240_000);
  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('creates the WorkloadEntry, its Healthy condition through the status subresource, owned by the group in the cluster', async () => {
    const group = await cluster.must<KubeObject>('POST', WG, {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'vm', namespace: NS },
      spec: { template: { ports: { http: 8080 } } },
    });
    catalog = new MemoryCatalog();
    const record = entryRecord('vm-10-0-0-1', { health: { status: 'True', at: T0 + 1000 } });
    catalog.set(record);

    const report = await project();

    expect(report.errors).toEqual([]);
    // One change; the condition is a second request, since the status subresource drops status
    // on create.
    expect(report.changes.map((c) => c.action)).toEqual(['created']);
    const entry = await stored('vm-10-0-0-1');
    const rendered = renderWorkloadEntry(record);
    expect(entry?.spec).toEqual(rendered.spec);
    // istiod's controller keys under the registrar's own (istiod-coexistence.ts), so the real
    // istiod never takes the entry for its own; the rest as rendered.
    expect(entry?.metadata.annotations).toEqual(clusterAnnotations(rendered.metadata.annotations));
    for (const key of ISTIOD_CONTROLLER_KEYS) {
      expect(entry?.metadata.annotations?.[key]).toBeUndefined();
    }
    // The uid the real server gave the group, not the registry's: a wrong uid would have the
    // garbage collector delete the entry.
    expect(group.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(entry?.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        name: 'vm',
        uid: group.metadata.uid,
        controller: true,
      },
    ]);
    expect(entry?.status?.conditions).toEqual(rendered.status?.conditions);
  });

  it('updates the object at the version it read, and health through status only', async () => {
    const before = await stored('vm-10-0-0-1');
    catalog.set(
      entryRecord('vm-10-0-0-1', {
        health: { status: 'False', at: T0 + 5000, message: 'probe failed' },
      }),
    );
    expect((await project()).changes.map((c) => c.action)).toEqual(['status-updated']);
    const unhealthy = await stored('vm-10-0-0-1');
    // A status write is not a spec change: the real server keeps the generation.
    expect(unhealthy?.metadata.generation).toBe(before?.metadata.generation);
    expect(unhealthy?.status?.conditions?.[0]).toMatchObject({
      type: 'Healthy',
      status: 'False',
      message: 'probe failed',
    });

    catalog.set(
      entryRecord('vm-10-0-0-1', {
        address: '10.0.0.9',
        health: { status: 'False', at: T0 + 5000, message: 'probe failed' },
      }),
    );
    expect((await project()).changes.map((c) => c.action)).toEqual(['updated']);
    const moved = await stored('vm-10-0-0-1');
    expect(moved?.spec).toMatchObject({ address: '10.0.0.9' });
    expect(moved?.metadata.generation).toBe(Number(before?.metadata.generation) + 1);
    // The object write kept the status the server holds (the subresource's contract).
    expect(moved?.status?.conditions?.[0]).toMatchObject({ type: 'Healthy', status: 'False' });

    // Someone else wrote in between: the real server refuses the stale version with 409.
    const stale = await cluster.request('PUT', `${WE}/vm-10-0-0-1`, before);
    expect(stale.status).toBe(409);
  });

  it('is refused by Istio CRD validation for an object the schema forbids, and projects the rest', async () => {
    catalog.set(
      entryRecord('vm-bad-port', { address: '10.0.0.2', ports: { http: 70_000 } }),
      entryRecord('vm-good', { address: '10.0.0.3' }),
    );

    const report = await project();

    // Istio's CRD: spec.ports values carry the CEL rule `0 < self && self <= 65535`.
    expect(report.errors).toHaveLength(1);
    expect(report.errors[0]?.name).toBe('vm-bad-port');
    expect(report.errors[0]?.message).toMatch(/422 Invalid.*port must be between 1-65535/);
    expect(await stored('vm-bad-port')).toBeUndefined();
    expect(await stored('vm-good')).toBeDefined();
    catalog.delete(NS, 'vm-bad-port');
  });

  it('deletes an object the registry no longer holds, with uid and resourceVersion preconditions', async () => {
    catalog.delete(NS, 'vm-good');
    const report = await project();
    expect(report.errors).toEqual([]);
    expect(report.changes).toContainEqual({
      kind: 'WorkloadEntry',
      action: 'deleted',
      namespace: NS,
      name: 'vm-good',
    });
    expect(await stored('vm-good')).toBeUndefined();
  });

  it('holds nothing beyond the documented ClusterRole', async () => {
    const asProjector = (method: string, path: string, body?: unknown) =>
      cluster.request(method, path, body, tokenOf(projectorConfig));
    // What the role grants works (the reconciles above ran with it) ...
    expect((await asProjector('GET', WE)).status).toBe(200);
    // ... and what it does not is refused by the real authorizer.
    expect((await asProjector('GET', `/api/v1/namespaces/${NS}/secrets`)).status).toBe(403);
    expect((await asProjector('GET', `/api/v1/namespaces/${NS}/configmaps`)).status).toBe(403);
    expect(
      (
        await asProjector('POST', WG, {
          apiVersion: 'networking.istio.io/v1',
          kind: 'WorkloadGroup',
          metadata: { name: 'forged', namespace: NS },
          spec: { template: {} },
        })
      ).status,
    ).toBe(403);
    expect((await asProjector('GET', `${WE}?watch=true&timeoutSeconds=1`)).status).toBe(403);
    // The server's own view of the identity: the role, bound to the ServiceAccount.
    const review = await cluster.request<{
      status: { resourceRules: { verbs: string[]; resources?: string[] }[] };
    }>(
      'POST',
      '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews',
      {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectRulesReview',
        spec: { namespace: NS },
      },
      tokenOf(projectorConfig),
    );
    const patch = review.body.status.resourceRules.filter(
      (rule) => rule.verbs.includes('patch') || rule.verbs.includes('*'),
    );
    expect(patch).toEqual([]);
    // And the role the server holds is the doc's, rule for rule.
    const role = await cluster.must<{ rules: unknown[] }>(
      'GET',
      `/apis/rbac.authorization.k8s.io/v1/clusterroles/${PROJECTOR_ROLE}`,
    );
    expect(role.rules).toEqual(documentedProjectorRole().rules);
  });

  it('watches: a version the server no longer keeps ends the watch with 410 Gone, and a watch from a listed version resumes', async () => {
    const projector = projectorCluster();
    const watch = projector.watch;
    if (!watch) throw new Error('the Kubernetes cluster adapter watches');
    // A version from before the API server's watch cache of WorkloadGroups began: the server
    // keeps no event from then.
    const namespace = await cluster.must<KubeObject>('GET', '/api/v1/namespaces/default');
    const expired = await watch(
      'WorkloadGroup',
      { namespace: NS, resourceVersion: namespace.metadata.resourceVersion },
      () => undefined,
    );
    expect(await expired.done).toBeInstanceOf(WatchExpiredError);

    const listed = await cluster.must<{ metadata: { resourceVersion: string } }>('GET', WG);
    const events: WatchEvent[] = [];
    const live = await watch(
      'WorkloadGroup',
      { namespace: NS, resourceVersion: listed.metadata.resourceVersion },
      (event) => events.push(event),
    );
    await cluster.must('POST', WG, {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'api', namespace: NS },
      // Istio's schema requires a template (the stand-in would take anything).
      spec: { template: {} },
    });
    await until(() => events.some((e) => e.type === 'ADDED' && e.object.metadata.name === 'api'));
    const lastSeen = events.at(-1)?.object.metadata.resourceVersion;
    live.stop();

    // Changed while nobody watched: a watch from the last version seen gets exactly that.
    const api = await cluster.must<KubeObject>('GET', `${WG}/api`);
    await cluster.must('PUT', `${WG}/api`, {
      ...api,
      metadata: { ...api.metadata, labels: { tier: 'b' } },
    });
    const resumed: WatchEvent[] = [];
    const again = await watch(
      'WorkloadGroup',
      { namespace: NS, resourceVersion: lastSeen },
      (event) => resumed.push(event),
    );
    await until(() => resumed.some((e) => e.type === 'MODIFIED'));
    again.stop();
    expect(
      resumed.filter((e) => e.type !== 'BOOKMARK').map((e) => [e.type, e.object.metadata.name]),
    ).toEqual([['MODIFIED', 'api']]);
  });
});

function tokenOf(kubeconfig: string): string {
  const match = /token: (\S+)/.exec(kubeconfig);
  if (!match?.[1]) throw new Error('the kubeconfig holds no token');
  return match[1];
}

async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
