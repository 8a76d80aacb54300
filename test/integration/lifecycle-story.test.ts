import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { ANNOTATIONS, type WorkloadEntry } from '../../lib/domain/model.ts';
import { REPLACED_CLOSE_REASON } from '../../lib/protocol/close-reasons.ts';
import { openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * One VM's life, told as an operator sees it: real WebSocket agents drive the local runtime
 * (dynalite, or the shared DynamoDB Local of the CI suite), and every observation is made
 * through the `registrar` CLI, as a person would check it.
 */

const GROUP_YAML = `
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata:
  name: api
  namespace: store
spec:
  metadata:
    labels: { app: api, tier: backend }
    annotations: { team: payments }
  template:
    ports: { grpc: 7070 }
    serviceAccount: api
    network: vpc-1
  probe:
    tcpSocket: { port: 7070 }
`;

const GRACE_MS = 400;

let runtime: LocalRuntime;
let cliEnv: Record<string, string>;

/** Runs `registrar ARGS` against the runtime's table; stdin for `apply -f -`. */
async function registrar(args: string[], stdin = '') {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from([stdin]),
    env: cliEnv,
    cwd: tmpdir(),
  });
  return { code, stdout, stderr };
}

/** Polls an async check until it returns a value (the $disconnect runs after the close). */
async function until<T>(check: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function entries(): Promise<WorkloadEntry[]> {
  const { code, stdout, stderr } = await registrar(['get', 'we', '-n', 'store', '-o', 'json']);
  expect(stderr.includes('error')).toBe(false);
  expect(code).toBe(0);
  return (JSON.parse(stdout) as { items: WorkloadEntry[] }).items;
}

beforeAll(async () => {
  runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    tableName: `story-${randomUUID()}`,
    gracePeriodMs: GRACE_MS,
    // The story runs the sweeper itself, at the moments it wants to look.
    sweepIntervalMs: 3_600_000,
    logLevel: 'SILENT',
    ...(process.env.REGISTRAR_TEST_DYNAMODB_ENDPOINT
      ? { dynamoDbEndpoint: process.env.REGISTRAR_TEST_DYNAMODB_ENDPOINT }
      : {}),
  });
  cliEnv = {
    REGISTRAR_DYNAMODB_ENDPOINT: runtime.dynamoDbEndpoint,
    REGISTRAR_TABLE: runtime.tableName,
  };
});

afterAll(async () => {
  await runtime?.close();
});

describe('a VM registered, rotated, unhealthy, gone and swept, as the CLI shows it', () => {
  let token: string;
  let first: TestClient;
  let second: TestClient;
  const url = () => `${runtime.url}?group=api&namespace=store&ip=10.2.0.9&label=zone=a`;

  it('applies the group and issues a join token', async () => {
    expect(await registrar(['apply', '-f', '-'], GROUP_YAML)).toMatchObject({
      code: 0,
      stdout: 'workloadgroup.networking.istio.io/api created\n',
    });
    const created = await registrar(['token', 'create', '-n', 'store', '--service-account', 'api']);
    expect(created.code).toBe(0);
    token = created.stdout.trim();
    expect(token.length).toBeGreaterThan(20);
  });

  it('shows the connected VM as an Istio WorkloadEntry built from the template', async () => {
    first = await openClient(url(), { Authorization: `Bearer ${token}` });

    const [entry] = await entries();
    expect(entry?.metadata.name).toBe('api-10.2.0.9');
    expect(entry?.spec).toMatchObject({
      address: '10.2.0.9',
      ports: { grpc: 7070 },
      network: 'vpc-1',
      serviceAccount: 'api',
    });
    expect(entry?.metadata.labels).toEqual({ app: 'api', tier: 'backend', zone: 'a' });
    expect(entry?.metadata.annotations).toMatchObject({
      team: 'payments',
      [ANNOTATIONS.autoRegistrationGroup]: 'api',
      [ANNOTATIONS.healthChecksEnabled]: 'true',
    });
    expect(entry?.metadata.annotations?.[ANNOTATIONS.connectedAt]).toEqual(expect.any(String));
    expect(entry?.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'WorkloadGroup', name: 'api', controller: true }),
    ]);
  });

  it('shows the Healthy condition the agent reports', async () => {
    expect(
      await first.request({ action: 'health', healthy: false, message: 'port closed' }),
    ).toEqual({ action: 'health', ok: true });

    const [entry] = await entries();
    expect(entry?.status?.conditions).toEqual([
      expect.objectContaining({ type: 'Healthy', status: 'False', message: 'port closed' }),
    ]);
    const table = await registrar(['get', 'we', '-n', 'store']);
    expect(table.stdout).toMatch(/api-10\.2\.0\.9\s+10\.2\.0\.9\s+True\s+False/);
  });

  it('keeps the VM connected and its status through a make-before-break rotation', async () => {
    second = await openClient(url(), { Authorization: `Bearer ${token}` });
    await first.close(1000, REPLACED_CLOSE_REASON);

    // The old connection's $disconnect has run once describe counts one live connection.
    await until(async () => {
      const { stdout } = await registrar(['describe', 'we', 'api-10.2.0.9', '-n', 'store']);
      return /Live Connections:\s+1\b/.test(stdout) ? stdout : undefined;
    });
    const [entry] = await entries();
    expect(entry?.metadata.annotations?.[ANNOTATIONS.disconnectedAt]).toBeUndefined();
    expect(entry?.status?.conditions?.[0]).toMatchObject({ status: 'False' });
  });

  it('marks the VM disconnected when its last connection closes, and keeps it for the grace period', async () => {
    await second.close();

    const entry = await until(async () => {
      const [current] = await entries();
      return current?.metadata.annotations?.[ANNOTATIONS.disconnectedAt] ? current : undefined;
    });
    expect(entry.metadata.annotations?.[ANNOTATIONS.connectedAt]).toBeUndefined();
    expect(entry.metadata.annotations?.[ANNOTATIONS.workloadController]).toBe('workload-registrar');
    const dryRun = await registrar(['sweep', '--dry-run', '--grace-period', '1h']);
    expect(dryRun.stdout).toMatch(/^0 would be deleted; /);
  });

  it('deletes the VM in the first sweep after the grace period', async () => {
    await new Promise((resolve) => setTimeout(resolve, GRACE_MS));

    const sweep = await registrar(['sweep', '--grace-period', `${GRACE_MS}ms`]);

    expect(sweep.code).toBe(0);
    expect(sweep.stdout).toContain('api-10.2.0.9');
    expect(await entries()).toEqual([]);
  });
});
