import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { HEARTBEAT_ANNOTATIONS } from '../../lib/domain/heartbeat.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * `npm start --heartbeat-lanes 2`: the local runtime starts lane 1 on a timer of its own beside
 * the sweep (as the stack's lane rule does each minute), lane 0 plans the shares, and a VM that
 * goes silent without closing its socket (a real WebSocket client) is still closed within its
 * group's 5 s x 2, by whichever lane holds its share.
 */
const GROUP_YAML = `
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata:
  name: web
  namespace: shop
  annotations:
    ${HEARTBEAT_ANNOTATIONS.interval}: 5s
    ${HEARTBEAT_ANNOTATIONS.misses}: "2"
spec:
  template:
    ports: { http: 8080 }
`;

let runtime: LocalRuntime;
let cliEnv: Record<string, string>;
const clients: TestClient[] = [];

async function registrar(args: string[], stdin = '') {
  let stdout = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: () => undefined },
    stdin: Readable.from([stdin]),
    env: cliEnv,
    cwd: tmpdir(),
  });
  return { code, stdout };
}

async function until<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    tableName: `lanes-${randomUUID()}`,
    gracePeriodMs: 120_000,
    sweepIntervalMs: 1_000,
    logLevel: 'SILENT',
    functionEnv: { REGISTRAR_HEARTBEAT_LANES: '2' },
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
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await runtime?.close();
});

describe('heartbeat lanes in npm start', () => {
  it('runs lane 1 beside the sweep, and a silent VM is still closed within its bound', async () => {
    expect((await registrar(['apply', '-f', '-'], GROUP_YAML)).code).toBe(0);
    const token = (await registrar(['token', 'create', '-n', 'shop'])).stdout.trim();
    const raw = createDynamoDbClient({
      region: runtime.region,
      endpoint: runtime.dynamoDbEndpoint,
    });
    const table = documentClientFor(raw);
    const item = async (sk: string) =>
      (
        await table.send(
          new GetCommand({ TableName: runtime.tableName, Key: { pk: 'SWEEPER', sk } }),
        )
      ).Item;
    try {
      // The sweep saw the setting; lane 1 wrote its own item (it runs); lane 0 planned 2 lanes.
      await until(
        async () =>
          String((await item('heartbeats'))?.groups).includes('shop/web') ? true : undefined,
        15_000,
      );
      const lane1 = await until(
        async () => (await item('heartbeat-cursor#1')) ?? undefined,
        15_000,
      );
      expect(JSON.parse(String(lane1.lane))).toMatchObject({ ranAt: expect.any(Number) });
      const plan = await until(async () => (await item('heartbeat-plan')) ?? undefined, 15_000);
      expect(JSON.parse(String(plan.plan))).toMatchObject({
        current: expect.anything(),
      });

      const quiet = await openClient(
        `${runtime.url}?group=web&namespace=shop&ip=10.9.1.2&agentVersion=0.2.0`,
        { Authorization: `Bearer ${token}` },
      );
      clients.push(quiet);
      await quiet.request({ action: 'describe' });
      const lastHeard = Date.now();

      const closed = await quiet.closed;
      const closedAfter = Date.now() - lastHeard;
      expect(closed.code).toBe(1000);
      // 10 s of silence + 1 s of slack, + one pass and the run's own time on a loaded machine.
      expect(closedAfter).toBeGreaterThan(10_000);
      expect(closedAfter).toBeLessThan(20_000);
      // Lane 1 kept running meanwhile: its item was written again.
      const again = JSON.parse(String((await item('heartbeat-cursor#1'))?.lane));
      expect(again.ranAt).toBeGreaterThan(JSON.parse(String(lane1.lane)).ranAt);
    } finally {
      raw.destroy();
    }
  }, 90_000);
});
