import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import type { WorkloadEntry } from '../../lib/domain/model.ts';
import { REGISTRAR_ANNOTATIONS } from '../../lib/projection/istiod-coexistence.ts';
import { servingState } from '../../lib/projection/serving.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { istiodRoutesTo } from '../fixtures/istio-routing-rule.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { eventually, openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * Kept and routable are two promises (DESIGN, "Routable follows reality"): a VM whose
 * connection dies stays registered for the grace period but leaves the mesh's load balancing
 * at once; a reconnect or a make-before-break rotation never takes it out. Played through the
 * local runtime with real WebSocket clients, and judged on what the projector wrote into the
 * cluster (the in-process kube-apiserver STAND-IN: no real API server runs here) by istiod's own
 * routing rule (test/fixtures/istio-routing-rule.ts).
 */

const NS = 'shop';
const NAME = 'web-10.0.0.7';
const URL_QUERY = '?group=web&namespace=shop&ip=10.0.0.7';
let api: KubeApiServerStandIn;
let runtime: LocalRuntime;
let dir: string;
let store: RegistrarStore;
let destroyClient: () => void;
let token: string;
const open: TestClient[] = [];

beforeAll(async () => {
  api = await startKubeApiServerStandIn();
  dir = await mkdtemp(join(tmpdir(), 'routable-'));
  await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
  runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    dataDir: dir,
    kubeconfig: join(dir, 'kubeconfig'),
    projectionIntervalMs: 100,
    // The default grace: a dead VM is kept this long, but must be out of traffic long before.
    gracePeriodMs: 5 * 60_000,
    logLevel: 'ERROR',
  });
  const client = createDocumentClient({ region: 'us-east-1', endpoint: runtime.dynamoDbEndpoint });
  destroyClient = () => client.destroy();
  store = composeRegistry(client, runtime.tableName);
  // A group without a probe: connected is what makes it routable, so only the connection can
  // take it out (a probed group would also be taken out by its probe).
  await store.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: NS },
    spec: { metadata: { labels: { app: 'web' } }, template: { ports: { http: 8080 } } },
  });
  const created = createJoinToken({ namespace: NS, ttlMs: 10 * 60_000, now: Date.now() });
  await new DynamoDbTokenStore(client, runtime.tableName).putToken(created.stored);
  token = created.token;
});

afterAll(async () => {
  for (const client of open) client.socket.terminate();
  destroyClient?.();
  await runtime?.close();
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

async function vm(): Promise<TestClient> {
  const client = await openClient(`${runtime.url}${URL_QUERY}`, {
    Authorization: `Bearer ${token}`,
  });
  open.push(client);
  return client;
}

function projected(): WorkloadEntry | undefined {
  return api.object('WorkloadEntry', NS, NAME) as unknown as WorkloadEntry | undefined;
}

/** Waits (polling, with a deadline) until the projected entry exists and istiod would or would not route to it. */
async function untilRoutable(routable: boolean, timeoutMs = 20_000): Promise<WorkloadEntry> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const entry = projected();
    if (entry && istiodRoutesTo(entry) === routable) return entry;
    if (Date.now() > deadline) {
      throw new Error(`the projected entry never became ${routable ? '' : 'un'}routable`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function holders(): Promise<string[]> {
  return (await store.getEntry({ namespace: NS, name: NAME }))?.connection?.connectionIds ?? [];
}

describe('a VM whose connection dies', () => {
  it('is out of traffic in the cluster within seconds of the crash, and still registered', async () => {
    const first = await vm();
    await untilRoutable(true);

    const crashedAt = Date.now();
    first.socket.terminate(); // no close frame: the TCP connection just ends, as in a crash
    const out = await untilRoutable(false);
    const seconds = (Date.now() - crashedAt) / 1000;

    // Istio's own bar: istiod deletes a disconnected entry after its 10 s grace. The grace
    // here is 5 minutes, so a rule that waited for the sweeper would fail by minutes.
    expect(seconds).toBeLessThan(10);
    // A group without a probe: the object write carries the decision (istiod routes nothing
    // once the annotation lands, there being no Healthy: True), and the condition saying why
    // follows. An entry that was Healthy True gets its status first (lib/projection/apply.ts;
    // test/integration/projection-status-faults.test.ts).
    expect(out.metadata.annotations?.['proxy.istio.io/health-checks-enabled']).toBe('true');
    const condition = await eventually(
      () => projected()?.status?.conditions?.find((c) => c.type === 'Healthy'),
      20_000,
    );
    expect(condition).toMatchObject({ status: 'False', reason: 'Disconnected' });
    const record = await store.getEntry({ namespace: NS, name: NAME });
    expect(record).toBeDefined();
    expect(record && servingState(record)).toMatchObject({ ready: false, reason: 'Disconnected' });
  });

  it('is the same entry, routable again, when its VM reconnects within the grace period', async () => {
    const before = projected();
    await vm();
    const back = await untilRoutable(true);
    expect(back.metadata.uid).toBe(before?.metadata.uid);
    expect(back.metadata.annotations?.[REGISTRAR_ANNOTATIONS.disconnectedAt]).toBeUndefined();
  });
});

describe('a VM that rotates its connection (make before break)', () => {
  it('never leaves the mesh while the new connection takes over from the old one', async () => {
    await untilRoutable(true);
    const [old] = await holders();
    const samples: boolean[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const entry = projected();
        if (entry) samples.push(istiodRoutesTo(entry));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();

    const replacement = await vm();
    const deadline = Date.now() + 20_000;
    while ((await holders()).length < 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const oldClient = open.find(
      (client) => client !== replacement && client.socket.readyState === 1,
    );
    await oldClient?.close(1000, 'replaced');
    while ((await holders()).includes(old ?? '') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Two more projection rounds after the old holder left, so a blip would have been written.
    await new Promise((resolve) => setTimeout(resolve, 300));
    sampling = false;
    await sampler;

    expect(await holders()).toHaveLength(1);
    expect(samples.length).toBeGreaterThan(10);
    expect(samples.every(Boolean)).toBe(true);
  });
});
