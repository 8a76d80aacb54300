import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { createProjectHandler } from '../../functions/project.ts';
import { LINKERD_ANNOTATIONS } from '../../lib/projection/desired-linkerd.ts';
import { REGISTRAR_ANNOTATIONS } from '../../lib/projection/istiod-coexistence.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';

/**
 * The projector over the real registry store (dynalite) and the real @kubernetes/client-node,
 * against the in-process kube-apiserver STAND-IN (no real API server can run here): the
 * Lambda handler on stream and schedule events, and the `registrar export` / `project` CLI.
 */

const CONNECTED_AT = Date.parse('2026-03-01T12:00:00Z');
let dynamo: TestDynamo;
let store: RegistrarStore;
let api: KubeApiServerStandIn;
let dir: string;

async function registerVm(name: string, address: string): Promise<void> {
  await store.connect({
    entry: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {
        name,
        namespace: 'shop',
        labels: { app: 'web' },
        creationTimestamp: new Date(CONNECTED_AT).toISOString(),
      },
      spec: { address, ports: { http: 8080 }, serviceAccount: 'web', labels: { app: 'web' } },
    },
    autoRegistrationGroup: 'web',
    origin: 'test-origin',
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: false,
    groupGeneration: 1,
    connectionId: `conn-${name}`,
    connectedAt: CONNECTED_AT,
    controller: 'workload-registrar',
    identity: { principal: 'token:abc', namespace: 'shop', serviceAccount: 'web' },
  });
}

function streamEvent(keys: { pk: string; sk: string }[]): DynamoDBStreamEvent {
  return {
    Records: keys.map((key) => ({
      eventName: 'MODIFY',
      dynamodb: { Keys: { pk: { S: key.pk }, sk: { S: key.sk } } },
    })),
  };
}

function handler() {
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  const cluster = createKubernetesCluster(config);
  return createProjectHandler({ store, connect: async () => cluster, targets: ['istio'] });
}

function registrar(args: string[], env: Record<string, string> = {}) {
  return captureCli(args, {
    env: {
      REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
      REGISTRAR_TABLE: dynamo.tableName,
      ...env,
    },
    cwd: dir,
  });
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  api = await startKubeApiServerStandIn();
  dir = await mkdtemp(join(tmpdir(), 'projection-'));
  await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
  await store.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: {
      name: 'web',
      namespace: 'shop',
      annotations: {
        [LINKERD_ANNOTATIONS.identity]:
          'spiffe://root.linkerd.cluster.local/{namespace}/{serviceAccount}',
        [LINKERD_ANNOTATIONS.serverName]: '{name}.{namespace}.external',
      },
    },
    spec: { template: { ports: { http: 8080 }, serviceAccount: 'web' } },
  });
  await registerVm('web-10-0-0-7', '10.0.0.7');
});

afterAll(async () => {
  await api?.close();
  await dynamo?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('projector function', () => {
  it('projects the namespaces a stream batch touched', async () => {
    const summary = await handler()(
      streamEvent([{ pk: 'NS#shop', sk: 'WE#web-10-0-0-7' }]),
      lambdaContext('project'),
    );

    expect(summary).toMatchObject({ scope: ['shop'], changes: 1, errors: 0 });
    expect(
      api.object('WorkloadEntry', 'shop', 'web-10-0-0-7')?.metadata.annotations?.[
        REGISTRAR_ANNOTATIONS.connectedAt
      ],
    ).toBe('2026-03-01T12:00:00.000Z');
  });

  it('does nothing for a batch of connection and token records', async () => {
    api.resetRequests();
    const summary = await handler()(
      streamEvent([
        { pk: 'CONN#abc', sk: 'CONN' },
        { pk: 'TOKEN', sk: 't1' },
      ]),
      lambdaContext('project'),
    );

    expect(summary.scope).toEqual([]);
    expect(api.requests).toEqual([]);
  });

  it('repairs everything on the schedule', async () => {
    api.remove('WorkloadEntry', 'shop', 'web-10-0-0-7');

    const summary = await handler()({}, lambdaContext('project'));

    expect(summary).toMatchObject({ scope: 'all', changes: 1 });
    expect(api.object('WorkloadEntry', 'shop', 'web-10-0-0-7')).toBeDefined();
  });

  it('fails the invocation when the cluster refuses, so the stream retries and bisects', async () => {
    const broken = await startKubeApiServerStandIn({ served: [] });
    const config = new KubeConfig();
    config.loadFromString(broken.kubeconfig);
    const failing = createProjectHandler({
      store,
      connect: async () => createKubernetesCluster(config),
      targets: ['istio'],
    });
    try {
      await expect(
        failing(streamEvent([{ pk: 'NS#shop', sk: 'WE#x' }]), lambdaContext('project')),
      ).rejects.toThrow('the cluster does not serve WorkloadEntry');
    } finally {
      await broken.close();
    }
  });
});

describe('registrar export and project', () => {
  it('exports WorkloadEntries as YAML documents for kubectl apply', async () => {
    const run = await registrar(['export', '--format', 'istio', '-n', 'shop']);

    expect(run.code).toBe(0);
    const docs = parseAllDocuments(run.stdout).map((doc) => doc.toJSON());
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {
        name: 'web-10-0-0-7',
        namespace: 'shop',
        labels: { 'app.kubernetes.io/managed-by': 'workload-registrar' },
      },
      spec: { address: '10.0.0.7' },
    });
  });

  it('exports ExternalWorkloads with meshTLS from the group', async () => {
    const run = await registrar(['export', '--format', 'linkerd', '-A']);

    expect(run.code).toBe(0);
    const doc = parse(run.stdout.replace(/^---\n/, ''));
    expect(doc.spec.meshTLS).toEqual({
      identity: 'spiffe://root.linkerd.cluster.local/shop/web',
      serverName: 'web-10-0-0-7.shop.external',
    });
  });

  it('refuses -n together with -A', async () => {
    const run = await registrar(['export', '--format', 'istio', '-n', 'shop', '-A']);
    expect(run.code).toBe(2);
  });

  it('project --dry-run prints what it would change and writes nothing', async () => {
    api.remove('WorkloadEntry', 'shop', 'web-10-0-0-7');
    api.resetRequests();

    const run = await registrar(['project', '--kubeconfig', join(dir, 'kubeconfig'), '--dry-run']);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('would have created WorkloadEntry shop/web-10-0-0-7');
    expect(api.writes()).toEqual([]);
  });

  it('project finds the cluster as kubectl does: KUBECONFIG without --kubeconfig', async () => {
    const run = await registrar(['project', '--dry-run'], {
      KUBECONFIG: `${join(dir, 'missing')}:${join(dir, 'kubeconfig')}`,
      HOME: dir,
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const none = await registrar(['project', '--dry-run'], { HOME: dir });
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain(join(dir, '.kube', 'config'));
  });

  it('project runs one reconcile and prints each change', async () => {
    const run = await registrar([
      'project',
      '--kubeconfig',
      join(dir, 'kubeconfig'),
      '--targets',
      'istio,linkerd',
    ]);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('created WorkloadEntry shop/web-10-0-0-7');
    expect(run.stdout).toContain('created ExternalWorkload shop/web-10-0-0-7');
    expect(
      api.object('ExternalWorkload', 'shop', 'web-10-0-0-7')?.status?.conditions?.[0]?.status,
    ).toBe('True');
  });
});
