import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { HEARTBEAT_ANNOTATIONS } from '../../lib/domain/heartbeat.ts';
import { ANNOTATIONS, type WorkloadEntry } from '../../lib/domain/model.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * A hung VM, as the local runtime and real WebSocket clients play it: two VMs of a group whose
 * heartbeat is 5 s x 2; one pings every 5 s, the other goes silent without closing its socket
 * (what a hung kernel or a cut network look like from the gateway). The silent one is closed
 * and its entry disconnected (not routable) within the bound; the pinging one stays.
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
/** 5 s x 2 = 10 s of silence, +1 s of clock slack, + one pass (the 1 s sweep), + the close. */
const BOUND_MS = 10_000 + 1_000 + 1_000;

/** A sweeper run's own time on a loaded shared machine (dynalite on the same 2 cores). */
const LOAD_MARGIN_MS = 8_000;

let runtime: LocalRuntime;
let cliEnv: Record<string, string>;
const clients: TestClient[] = [];
const timers: NodeJS.Timeout[] = [];

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

async function until<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function entry(name: string): Promise<WorkloadEntry | undefined> {
  const { stdout } = await registrar(['get', 'we', '-n', 'shop', '-o', 'json']);
  return (JSON.parse(stdout) as { items: WorkloadEntry[] }).items.find(
    (e) => e.metadata.name === name,
  );
}

beforeAll(async () => {
  runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    tableName: `silence-${randomUUID()}`,
    // Long enough that the silent VM's entry is still there to look at.
    gracePeriodMs: 120_000,
    sweepIntervalMs: 1_000,
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
  for (const timer of timers) clearInterval(timer);
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await runtime?.close();
});

describe('a VM that goes silent without closing its connection', () => {
  it('is closed and unroutable within 5 s x 2 + one pass, while a VM that pings stays', async () => {
    expect((await registrar(['apply', '-f', '-'], GROUP_YAML)).code).toBe(0);
    const token = (await registrar(['token', 'create', '-n', 'shop'])).stdout.trim();
    // The sweeper applies the setting to connections made once it has seen it.
    const raw = createDynamoDbClient({
      region: runtime.region,
      endpoint: runtime.dynamoDbEndpoint,
    });
    const table = documentClientFor(raw);
    try {
      await until(async () => {
        const { Item } = await table.send(
          new GetCommand({
            TableName: runtime.tableName,
            Key: { pk: 'SWEEPER', sk: 'heartbeats' },
          }),
        );
        return String(Item?.groups ?? '').includes('shop/web') ? true : undefined;
      }, 10_000);
    } finally {
      raw.destroy();
    }
    const open = async (ip: string) => {
      const client = await openClient(
        `${runtime.url}?group=web&namespace=shop&ip=${ip}&agentVersion=0.2.0`,
        { Authorization: `Bearer ${token}` },
      );
      clients.push(client);
      return client;
    };
    const chatty = await open('10.9.0.1');
    const quiet = await open('10.9.0.2');
    const described = await quiet.request({ action: 'describe' });
    // The quiet VM's last message: from here on it says nothing, its socket stays open.
    const lastHeard = Date.now();
    expect(described.heartbeat).toEqual({ intervalSeconds: 5, misses: 2 });
    await chatty.request({ action: 'describe' });
    timers.push(
      setInterval(() => {
        chatty.request({ action: 'ping' }).catch(() => undefined);
      }, 5_000),
    );

    const closed = await quiet.closed;
    const closedAfter = Date.now() - lastHeard;
    const gone = await until(async () => {
      const e = await entry('web-10.9.0.2');
      return e?.metadata.annotations?.[ANNOTATIONS.disconnectedAt] ? e : undefined;
    }, BOUND_MS + 10_000);

    expect(closed.code).toBe(1000);
    expect(gone.metadata.annotations?.[ANNOTATIONS.connectedAt]).toBeUndefined();
    // Closed only after the dropped holder's write: the entry left no later than this.
    expect(closedAfter).toBeGreaterThan(10_000);
    // The bound, plus what a sweeper run takes on a loaded 2-core machine (a few seconds).
    expect(closedAfter).toBeLessThan(BOUND_MS + LOAD_MARGIN_MS);
    const described2 = await registrar(['describe', 'we', 'web-10.9.0.2', '-n', 'shop']);
    expect(described2.stdout).toMatch(
      /Warning\s+Silent\s+.*sent nothing for \d+s, past its heartbeat 5s x 2/,
    );

    // The pinging VM stays held, well past the bound.
    await until(async () => (Date.now() - lastHeard > BOUND_MS + 3_000 ? true : undefined), 20_000);
    const kept = await entry('web-10.9.0.1');
    expect(kept?.metadata.annotations?.[ANNOTATIONS.connectedAt]).toEqual(expect.any(String));
    expect(chatty.socket.readyState).toBe(chatty.socket.OPEN);
  }, 90_000);
});
