import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import type { WorkloadEntry } from '../../lib/domain/model.ts';
import { buildBootstrap } from '../../lib/mesh-identity/bootstrap.ts';
import {
  ISTIOD_CONTROLLER_KEYS,
  REGISTRAR_ANNOTATIONS,
} from '../../lib/projection/istiod-coexistence.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { istiodRoutesTo } from '../fixtures/istio-routing-rule.ts';
import {
  type IstiodControllerModel,
  type ModelEntry,
  startIstiodControllerModel,
} from '../fixtures/istiod-controller-model.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * Nothing the registrar projects fights istiod (DESIGN, "A good neighbour in the cluster").
 * `npm start --project` runs against the kube-apiserver STAND-IN with two replicas of a MODEL of
 * istiod's auto-registration controller beside it (test/fixtures/istiod-controller-model.ts,
 * written from Istio's source; the real istiod is test/real-cluster's stage). Its timers are
 * scaled: a grace of 100 ms (Istio's 10 s), so a cleanup pass every second, and a keepalive max
 * connection age of 200 ms (Helm's 30 min), so istiod would take any connection older than
 * 300 ms (Helm: 45 min) as stale. The registrar's own grace is its default 5 minutes.
 *
 * On 0.2.0's projection (istiod's controller annotations on the cluster copy) every case below
 * fails: istiod deletes the live VM's entry each pass and the crashed VM's 100 ms after its crash.
 */

const NS = 'shop';
const NAME = 'web-10.0.0.9';
const ISTIOD_GRACE_MS = 100;
const ISTIOD_KEEPALIVE_MS = 200;
let api: KubeApiServerStandIn;
let runtime: LocalRuntime;
let dir: string;
let store: RegistrarStore;
let destroyClient: () => void;
let token: string;
let replicas: IstiodControllerModel[] = [];
const open: TestClient[] = [];

beforeAll(async () => {
  api = await startKubeApiServerStandIn();
  dir = await mkdtemp(join(tmpdir(), 'istiod-coexistence-'));
  await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
  runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    dataDir: dir,
    kubeconfig: join(dir, 'kubeconfig'),
    projectionIntervalMs: 100,
    gracePeriodMs: 5 * 60_000,
    logLevel: 'ERROR',
  });
  const client = createDocumentClient({ region: 'us-east-1', endpoint: runtime.dynamoDbEndpoint });
  destroyClient = () => client.destroy();
  store = composeRegistry(client, runtime.tableName);
  // A group with a probe: the projected entry carries health-checks-enabled and a Healthy
  // condition, the shape istiod's health branch would take for its own with a controller key.
  await store.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: NS },
    spec: {
      metadata: { labels: { app: 'web' } },
      template: { ports: { http: 8080 }, serviceAccount: 'web' },
      probe: { httpGet: { port: 8080, path: '/healthz' } },
    },
  });
  const created = createJoinToken({
    namespace: NS,
    serviceAccount: 'web',
    ttlMs: 10 * 60_000,
    now: Date.now(),
  });
  await new DynamoDbTokenStore(client, runtime.tableName).putToken(created.stored);
  token = created.token;
  replicas = [0, 1].map((replica) => {
    const model = startIstiodControllerModel({
      url: api.url,
      token: 'stand-in-token',
      instanceId: `istiod-${replica}`,
      gracePeriodMs: ISTIOD_GRACE_MS,
      keepaliveMaxServerConnectionAgeMs: ISTIOD_KEEPALIVE_MS,
    });
    model.start();
    return model;
  });
});

afterAll(async () => {
  await Promise.all(replicas.map((model) => model.stop()));
  for (const client of open) client.socket.terminate();
  destroyClient?.();
  await runtime?.close();
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

async function healthyVm(): Promise<TestClient> {
  const client = await openClient(`${runtime.url}?group=web&namespace=${NS}&ip=10.0.0.9`, {
    Authorization: `Bearer ${token}`,
  });
  open.push(client);
  const reply = await client.request({ action: 'health', healthy: true });
  expect(reply).toMatchObject({ ok: true });
  return client;
}

function projected(): WorkloadEntry | undefined {
  return api.object('WorkloadEntry', NS, NAME) as unknown as WorkloadEntry | undefined;
}

async function until<T>(what: string, check: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Samples the projected entry every 10 ms until every istiod replica has run `passes` more
 * cleanup passes; returns what was seen. A pass of either replica that deleted the entry, or
 * removed its condition, shows as a missing sample, a changed uid or a write of the model.
 */
async function throughCleanupPasses(passes: number) {
  const start = replicas.map((model) => model.passes());
  const seen = { samples: 0, missing: 0, uids: new Set<string>(), routable: new Set<boolean>() };
  await until(
    `${passes} cleanup passes of each istiod replica`,
    () => {
      const entry = projected();
      seen.samples += 1;
      if (!entry) seen.missing += 1;
      else {
        seen.uids.add(entry.metadata.uid ?? '');
        seen.routable.add(istiodRoutesTo(entry));
      }
      return replicas.every((model, i) => model.passes() >= (start[i] ?? 0) + passes)
        ? true
        : undefined;
    },
    30_000,
  );
  return seen;
}

describe('istiod beside the projector (a model of its controller, two replicas)', () => {
  it('never cleans a live VM, however old its connection', async () => {
    await healthyVm();
    const first = await until('the VM routable in the cluster', () => {
      const entry = projected();
      return entry && istiodRoutesTo(entry) ? entry : undefined;
    });

    const seen = await throughCleanupPasses(3);

    expect(seen.missing).toBe(0);
    expect([...seen.uids]).toEqual([first.metadata.uid]);
    expect([...seen.routable]).toEqual([true]);
    for (const model of replicas) expect(model.writes()).toEqual([]);
    // The connection is older than istiod's max connection age (300 ms here), and the object
    // still says when it connected, under the registrar's own key.
    const now = projected() as WorkloadEntry;
    const connectedAt = Date.parse(
      now.metadata.annotations?.[REGISTRAR_ANNOTATIONS.connectedAt] ?? '',
    );
    expect(Date.now() - connectedAt).toBeGreaterThan(1.5 * ISTIOD_KEEPALIVE_MS);
    for (const key of ISTIOD_CONTROLLER_KEYS)
      expect(now.metadata.annotations?.[key]).toBeUndefined();
    expect(now.status?.conditions?.find((c) => c.type === 'Healthy')?.status).toBe('True');
  });

  it('keeps a crashed VM, out of traffic, for the registrar grace, not istiod’s', async () => {
    const before = projected() as WorkloadEntry;
    for (const client of open.splice(0)) client.socket.terminate(); // a crash: no close frame
    await until('the crashed VM unroutable', () => {
      const entry = projected();
      return entry && !istiodRoutesTo(entry) ? entry : undefined;
    });

    const seen = await throughCleanupPasses(3);

    expect(seen.missing).toBe(0);
    expect([...seen.uids]).toEqual([before.metadata.uid]);
    expect([...seen.routable]).toEqual([false]);
    for (const model of replicas) expect(model.writes()).toEqual([]);
    const kept = projected() as WorkloadEntry;
    expect(kept.metadata.annotations?.[REGISTRAR_ANNOTATIONS.disconnectedAt]).toEqual(
      expect.any(String),
    );
  });

  it('routes to the same object again when the VM reconnects within the grace', async () => {
    const before = projected() as WorkloadEntry;
    await healthyVm();
    const back = await until('the VM routable again', () => {
      const entry = projected();
      return entry && istiodRoutesTo(entry) ? entry : undefined;
    });
    expect(back.metadata.uid).toBe(before.metadata.uid);
    expect(back.metadata.annotations?.[REGISTRAR_ANNOTATIONS.disconnectedAt]).toBeUndefined();
  });

  it("lets istiod take nothing from the VM's own sidecar: connect, group add, disconnect", async () => {
    const record = await store.getEntry({ namespace: NS, name: NAME });
    expect(record).toBeDefined();
    const bootstrap = buildBootstrap(
      {
        namespace: NS,
        group: 'web',
        serviceAccount: 'web',
        labels: record?.entry.spec.labels ?? {},
        groupLabels: { app: 'web' },
        ports: { http: 8080 },
        network: undefined,
      },
      {
        tokenAudience: 'istio-ca',
        tokenLifetimeSeconds: 3600,
        discoveryAddress: 'istiod.istio-system.svc:15012',
        istiodAddress: undefined,
        trustDomain: 'cluster.local',
        clusterId: 'Kubernetes',
        meshId: undefined,
        rootCert: undefined,
      },
      '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n',
    );
    // istio-agent sends its ISTIO_META_* environment (cluster.env) and the mesh config's
    // proxyMetadata as the proxy's metadata.
    const proxy = {
      namespace: NS,
      ip: '10.0.0.9',
      metadata: { ...bootstrap.clusterEnv, ...bootstrap.meshConfig.defaultConfig.proxyMetadata },
    };

    for (const model of replicas) {
      expect(await model.connect(proxy)).toBeUndefined();
      await model.groupAdded(NS, 'web');
      await model.disconnect(proxy);
      expect(model.writes()).toEqual([]);
    }
  });

  it('rewrites an entry 0.2.0 projected (istiod keys) in place, so istiod stops taking it', async () => {
    // istiod's replicas stop first: they would delete the old shape before the projector
    // rewrites it (0.2.0's bug); here only the rewrite is under test.
    await Promise.all(replicas.map((model) => model.stop()));
    const current = projected() as WorkloadEntry;
    const annotations = { ...(current.metadata.annotations ?? {}) };
    // 0.2.0's shape: istiod's controller keys, a connection older than istiod's max age.
    for (const [registrarKey, istioKey] of [
      [REGISTRAR_ANNOTATIONS.autoRegistrationGroup, 'istio.io/autoRegistrationGroup'],
      [REGISTRAR_ANNOTATIONS.workloadController, 'istio.io/workloadController'],
      [REGISTRAR_ANNOTATIONS.connectedAt, 'istio.io/connectedAt'],
    ] as const) {
      annotations[istioKey] = annotations[registrarKey] ?? '';
      delete annotations[registrarKey];
    }
    annotations['istio.io/connectedAt'] = new Date(Date.now() - 60_000).toISOString();
    const old = api.put('WorkloadEntry', {
      ...(current as unknown as ModelEntry),
      metadata: { ...current.metadata, annotations },
    } as never);
    // The model of istiod would delete exactly this object.
    expect(replicas[0]?.shouldCleanup(old as unknown as ModelEntry)).toBe(true);

    const rewritten = await until('the projector to rewrite the old shape', () => {
      const entry = projected();
      return entry?.metadata.annotations?.['istio.io/autoRegistrationGroup'] === undefined
        ? entry
        : undefined;
    });

    expect(rewritten.metadata.uid).toBe(current.metadata.uid);
    for (const key of ISTIOD_CONTROLLER_KEYS)
      expect(rewritten.metadata.annotations?.[key]).toBeUndefined();
    expect(replicas[0]?.shouldCleanup(rewritten as unknown as ModelEntry)).toBe(false);
    expect(istiodRoutesTo(rewritten)).toBe(true);
  });
});
