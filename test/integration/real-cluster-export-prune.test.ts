import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import type { WorkloadEntry } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { istiodRoutesTo } from '../fixtures/istio-routing-rule.ts';
import { type RealCluster, startRealCluster } from '../fixtures/real-cluster.ts';
import { realClusterSkip } from '../fixtures/real-cluster-binaries.ts';

/**
 * A GitOps pipeline, for real: `registrar export --format istio | kubectl apply --prune` with
 * the machine's kubectl against a REAL kube-apiserver serving Istio's CRDs (test/fixtures/
 * real-cluster.ts). With every VM of the namespace down, the default export keeps their objects
 * (same uids), marked so that istiod's routing rule sends them nothing; `--routable-only` leaves
 * a dead VM out, and `--prune` then deletes its object. istiod's rule is test/fixtures/
 * istio-routing-rule.ts (real-cluster-istiod.test.ts checks the rule against istiod itself).
 */

const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
const noKubectl =
  kubectl.status === 0
    ? undefined
    : 'kubectl not found: apt-get install kubectl (.ci/run installs it)';
if (noKubectl && process.env.CI !== 'true') console.warn(`export-prune test skipped: ${noKubectl}`);
const skipped = realClusterSkip() ?? (process.env.CI === 'true' ? undefined : noKubectl);

const NS = 'shop';
const AT = Date.parse('2026-03-01T12:00:00Z');
const WE = `/apis/networking.istio.io/v1/namespaces/${NS}/workloadentries`;
let cluster: RealCluster;
let runtime: LocalRuntime;
let store: RegistrarStore;
let destroyClient: () => void;
let dir: string;
let kubeconfig: string;

async function registrar(args: string[]) {
  const run = await captureCli(args, {
    env: {
      REGISTRAR_DYNAMODB_ENDPOINT: runtime.dynamoDbEndpoint,
      REGISTRAR_TABLE: runtime.tableName,
    },
  });
  expect(run.code, run.stderr).toBe(0);
  return run;
}

/** `kubectl apply --prune` of what the export printed, as a pipeline runs it. */
function kubectlApplyPrune(yaml: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'kubectl',
      [
        '--kubeconfig',
        kubeconfig,
        'apply',
        '-n',
        NS,
        '--prune',
        '-l',
        'app.kubernetes.io/managed-by=workload-registrar',
        '--prune-allowlist=networking.istio.io/v1/WorkloadEntry',
        '-f',
        '-',
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code: code ?? 1, out }));
    child.stdin.end(yaml);
  });
}

async function inCluster(): Promise<Map<string, WorkloadEntry>> {
  const list = await cluster.must<{ items: WorkloadEntry[] }>('GET', WE);
  return new Map(list.items.map((item) => [item.metadata.name, item]));
}

async function connect(name: string, connectionId: string) {
  await store.connect({
    ...connectChange({ name, namespace: NS, connectionId, connectedAt: AT }),
    healthChecksEnabled: false,
  });
}

describe.skipIf(skipped)(
  'registrar export | kubectl apply --prune, against a real API server',
  () => {
    beforeAll(async () => {
      cluster = await startRealCluster({ namespaces: [NS] });
      dir = await mkdtemp(join(tmpdir(), 'export-prune-'));
      kubeconfig = join(dir, 'kubeconfig');
      await writeFile(kubeconfig, await readAdminKubeconfig());
      runtime = await startLocalRuntime({ port: 0, memory: true, logLevel: 'ERROR' });
      const client = createDocumentClient({
        region: 'us-east-1',
        endpoint: runtime.dynamoDbEndpoint,
      });
      destroyClient = () => client.destroy();
      store = composeRegistry(client, runtime.tableName);
      await store.applyGroup({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: { name: 'web', namespace: NS },
        spec: { template: { ports: { http: 8080 } } },
      });
      await connect('web-10.0.0.1', 'c1');
      await connect('web-10.0.0.2', 'c2');
    }, 240_000);

    afterAll(async () => {
      destroyClient?.();
      await runtime?.close();
      await cluster?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    }, 60_000);

    async function readAdminKubeconfig(): Promise<string> {
      const { readFile } = await import('node:fs/promises');
      return readFile(cluster.adminKubeconfigPath, 'utf8');
    }

    it('keeps every object, out of traffic, when every VM of the namespace is down', async () => {
      const up = await kubectlApplyPrune(
        (await registrar(['export', '--format', 'istio', '-n', NS])).stdout,
      );
      expect(up.code, up.out).toBe(0);
      const before = await inCluster();
      expect([...before.keys()].sort()).toEqual(['web-10.0.0.1', 'web-10.0.0.2']);
      for (const entry of before.values()) expect(istiodRoutesTo(entry)).toBe(true);

      for (const [name, connectionId] of [
        ['web-10.0.0.1', 'c1'],
        ['web-10.0.0.2', 'c2'],
      ] as const) {
        await store.leave({ connectionId, entry: { namespace: NS, name }, at: AT + 5_000 });
      }
      const down = await kubectlApplyPrune(
        (await registrar(['export', '--format', 'istio', '-n', NS])).stdout,
      );
      expect(down.code, down.out).toBe(0);
      expect(down.out).not.toContain('pruned');

      const after = await inCluster();
      expect([...after.keys()].sort()).toEqual(['web-10.0.0.1', 'web-10.0.0.2']);
      for (const [name, entry] of after) {
        expect(entry.metadata.uid).toBe(before.get(name)?.metadata.uid);
        expect(istiodRoutesTo(entry)).toBe(false);
      }
    }, 60_000);

    it('routes to the same object again once its VM is back', async () => {
      const before = await inCluster();
      await connect('web-10.0.0.1', 'c3');
      const back = await kubectlApplyPrune(
        (await registrar(['export', '--format', 'istio', '-n', NS])).stdout,
      );
      expect(back.code, back.out).toBe(0);
      const after = await inCluster();
      expect(istiodRoutesTo(after.get('web-10.0.0.1') as WorkloadEntry)).toBe(true);
      expect(after.get('web-10.0.0.1')?.metadata.uid).toBe(
        before.get('web-10.0.0.1')?.metadata.uid,
      );
      expect(istiodRoutesTo(after.get('web-10.0.0.2') as WorkloadEntry)).toBe(false);
    }, 60_000);

    it('with --routable-only, --prune deletes the dead VM the registrar still keeps', async () => {
      const only = await kubectlApplyPrune(
        (await registrar(['export', '--format', 'istio', '-n', NS, '--routable-only'])).stdout,
      );
      expect(only.code, only.out).toBe(0);
      expect(only.out).toMatch(/workloadentry\.networking\.istio\.io\/web-10\.0\.0\.2 pruned/);
      expect([...(await inCluster()).keys()]).toEqual(['web-10.0.0.1']);
      // The registry still keeps it for its grace: the pipeline, not the registrar, dropped it.
      expect(await store.getEntry({ namespace: NS, name: 'web-10.0.0.2' })).toBeDefined();
    }, 60_000);
  },
);
