import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../lib/projection/objects.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { istiodRoutesTo } from '../fixtures/istio-routing-rule.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';

/**
 * `registrar export --format istio | kubectl apply -f -`, then the cluster read as istiod
 * reads it. The apply goes to the kube-apiserver STAND-IN (no real API server runs here) the
 * way kubectl's first apply does: a POST of each object, whose `status` the API server drops
 * because WorkloadEntry has a status subresource.
 */

const AT = Date.parse('2026-03-01T12:00:00Z');
let dynamo: TestDynamo;
let store: RegistrarStore;
let api: KubeApiServerStandIn;

/** istiod's readiness of what kubectl applied (test/fixtures/istio-routing-rule.ts). */
const readyForIstiod = (object: KubeObject) =>
  istiodRoutesTo(object as unknown as Parameters<typeof istiodRoutesTo>[0]);

async function kubectlApply(yaml: string): Promise<void> {
  for (const doc of parseAllDocuments(yaml)) {
    const object = doc.toJSON() as KubeObject;
    const path = `/apis/networking.istio.io/v1/namespaces/${object.metadata.namespace}/workloadentries`;
    const response = await fetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(object),
    });
    expect(response.status).toBe(201);
  }
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  api = await startKubeApiServerStandIn();
  // A VM of a group with a probe, connected and reported healthy.
  const change = connectChange({
    name: 'web-10.0.0.1',
    namespace: 'shop',
    connectionId: 'c1',
    connectedAt: AT,
  });
  await store.connect({ ...change, healthChecksEnabled: true });
  await store.reportHealth({
    entry: { namespace: 'shop', name: 'web-10.0.0.1' },
    connectionId: 'c1',
    healthy: true,
    at: AT + 1000,
  });
  // Two that the mesh must not be sent to: one crashed after reporting healthy (no connection
  // holds it), one connected whose probe fails.
  for (const [name, connectionId, healthy] of [
    ['web-10.0.0.2', 'c2', true],
    ['web-10.0.0.3', 'c3', false],
  ] as const) {
    const other = connectChange({ name, namespace: 'shop', connectionId, connectedAt: AT });
    await store.connect({ ...other, healthChecksEnabled: true });
    await store.reportHealth({
      entry: { namespace: 'shop', name },
      connectionId,
      healthy,
      at: AT + 1000,
    });
  }
  await store.leave({
    connectionId: 'c2',
    entry: { namespace: 'shop', name: 'web-10.0.0.2' },
    at: AT + 5000,
  });
});

const env = () => ({
  REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
  REGISTRAR_TABLE: dynamo.tableName,
});
const names = (yaml: string) =>
  parseAllDocuments(yaml).map((doc) => (doc.toJSON() as KubeObject).metadata.name);

afterAll(async () => {
  await api?.close();
  await dynamo?.close();
});

describe('registrar export --format istio, applied with kubectl', () => {
  it('with --routable-only keeps a healthy VM ready in istiod and exports nothing kubectl apply cannot carry', async () => {
    const run = await captureCli(['export', '--format', 'istio', '-n', 'shop', '--routable-only'], {
      env: env(),
    });
    expect(run.code).toBe(0);
    expect(names(run.stdout)).toEqual(['web-10.0.0.1']);

    await kubectlApply(run.stdout);

    const applied = api.object('WorkloadEntry', 'shop', 'web-10.0.0.1');
    expect(applied).toBeDefined();
    expect(readyForIstiod(applied as KubeObject)).toBe(true);
    expect(run.stdout).not.toContain('status:');
    expect(run.stdout).not.toContain('health-checks-enabled');
    expect(run.stderr).toBe(
      'note: 2 entries left out because the mesh sends them no traffic now (disconnected, unhealthy or cordoned: shop/web-10.0.0.2, shop/web-10.0.0.3); kubectl apply --prune would delete them from the cluster; without --routable-only they are exported marked so istiod keeps them out\n' +
        "note: 1 entry exported without health (proxy.istio.io/health-checks-enabled and its Healthy condition): health is live state, and kubectl apply cannot write a WorkloadEntry's status, without which istiod would never send it traffic; for live health run the projector (docs/kubernetes.md)\n",
    );
  });

  it('by default exports the dead and the unhealthy VM so that istiod keeps them out and --prune keeps them', async () => {
    await api.close();
    api = await startKubeApiServerStandIn();
    const run = await captureCli(['export', '--format', 'istio', '-n', 'shop'], { env: env() });
    expect(run.code).toBe(0);
    expect(names(run.stdout)).toEqual(['web-10.0.0.1', 'web-10.0.0.2', 'web-10.0.0.3']);
    expect(run.stderr).not.toContain('left out');
    expect(run.stderr).toContain(
      'note: 2 entries exported out of traffic (disconnected, unhealthy or cordoned: shop/web-10.0.0.2, shop/web-10.0.0.3), marked with proxy.istio.io/health-checks-enabled and no Healthy condition, so istiod sends them nothing; --routable-only leaves them out\n',
    );

    await kubectlApply(run.stdout);

    const ready = (name: string) =>
      readyForIstiod(api.object('WorkloadEntry', 'shop', name) as KubeObject);
    expect(ready('web-10.0.0.1')).toBe(true);
    expect(ready('web-10.0.0.2')).toBe(false);
    expect(ready('web-10.0.0.3')).toBe(false);
  });
});
