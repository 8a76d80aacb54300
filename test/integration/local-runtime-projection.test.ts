import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLocalOptions } from '../../infra/local/options.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { eventually, openClient } from '../fixtures/websocket-client.ts';

// `npm start --kubeconfig`: the local runtime projects what agents register into a cluster.
// The cluster is the in-process kube-apiserver STAND-IN (no real API server runs here).

let api: KubeApiServerStandIn;
let runtime: LocalRuntime;
let dir: string;

beforeAll(async () => {
  api = await startKubeApiServerStandIn();
  dir = await mkdtemp(join(tmpdir(), 'runtime-projection-'));
  await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
  runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    dataDir: dir,
    kubeconfig: join(dir, 'kubeconfig'),
    projectionIntervalMs: 100,
    logLevel: 'ERROR',
  });
});

afterAll(async () => {
  await runtime?.close();
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('local runtime with --kubeconfig', () => {
  it('projects a VM that connects as an Istio WorkloadEntry in the cluster', async () => {
    const client = createDocumentClient({
      region: 'us-east-1',
      endpoint: runtime.dynamoDbEndpoint,
    });
    await composeRegistry(client, runtime.tableName).applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { metadata: { labels: { app: 'web' } }, template: { ports: { http: 8080 } } },
    });
    const { token, stored } = createJoinToken({
      namespace: 'shop',
      ttlMs: 60_000,
      now: Date.now(),
    });
    await new DynamoDbTokenStore(client, runtime.tableName).putToken(stored);

    const agent = await openClient(`${runtime.url}?group=web&namespace=shop&ip=10.0.0.7`, {
      Authorization: `Bearer ${token}`,
    });
    const projected = await eventually(
      () => api.object('WorkloadEntry', 'shop', 'web-10.0.0.7'),
      10_000,
    );
    await agent.close();
    client.destroy();

    expect(projected.spec).toMatchObject({ address: '10.0.0.7', labels: { app: 'web' } });
    expect(projected.metadata.labels?.['app.kubernetes.io/managed-by']).toBeDefined();
  });
});

describe('npm start projection options', () => {
  it('reads --kubeconfig and --projection-targets', () => {
    const parsed = parseLocalOptions(
      ['--kubeconfig', '/tmp/kc', '--projection-targets', 'istio,endpointslices'],
      {},
    );
    expect(parsed).toMatchObject({
      kind: 'run',
      options: { kubeconfig: '/tmp/kc', projectionTargets: ['istio', 'endpointslices'] },
    });
  });

  it('refuses an unknown projection target, naming the option and the value', () => {
    expect(() => parseLocalOptions(['--projection-targets', 'consul'], {})).toThrow(
      /--projection-targets 'consul'/,
    );
  });
});
