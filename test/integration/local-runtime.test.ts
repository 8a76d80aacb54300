import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startDynamoDbLocal } from '../../infra/local/dynamodb-local-server.ts';
import {
  type LocalRuntime,
  type LocalRuntimeOptions,
  type SweepRunOutcome,
  startLocalRuntime,
} from '../../infra/local/runtime.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import { openClient, refusedUpgrade } from '../fixtures/websocket-client.ts';

/**
 * The lifecycle story through `startLocalRuntime`, as an agent lives it: real WebSocket clients,
 * the real handlers behind the local gateway, and real storage (dynalite in memory, or DynamoDB
 * Local with REGISTRAR_TEST_BACKEND=dynamodb-local).
 */

// Long enough that a sweep right after the disconnect is surely inside it, short enough to wait.
const GRACE_MS = 800;

const webGroup: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'web', namespace: 'shop' },
  spec: {
    metadata: { labels: { app: 'web' } },
    template: { ports: { http: 8080 }, serviceAccount: 'web' },
    probe: { periodSeconds: 5, httpGet: { port: 8080, path: '/healthz' } },
  },
};

/** DynamoDB Local is shared by the file (a JVM per runtime would be slow); dynalite is per runtime. */
let sharedEndpoint: string | undefined;
let stopShared: (() => Promise<void>) | undefined;

beforeAll(async () => {
  sharedEndpoint = process.env.REGISTRAR_TEST_DYNAMODB_ENDPOINT;
  if (!sharedEndpoint && testBackend() === 'dynamodb-local') {
    const server = await startDynamoDbLocal();
    sharedEndpoint = server.endpoint;
    stopShared = () => server.close();
  }
});

afterAll(async () => {
  await stopShared?.();
});

interface Harness {
  runtime: LocalRuntime;
  store: RegistrarStore;
  tokens: DynamoDbTokenStore;
  connectUrl(ip: string, extra?: string): string;
  token(namespace?: string, serviceAccount?: string): Promise<string>;
}

async function harness(options: LocalRuntimeOptions = {}): Promise<Harness> {
  const runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    tableName: `registry-${randomUUID()}`,
    gracePeriodMs: GRACE_MS,
    logLevel: 'SILENT',
    ...(sharedEndpoint ? { dynamoDbEndpoint: sharedEndpoint } : {}),
    ...options,
  });
  const client = createDocumentClient({
    region: runtime.region,
    endpoint: runtime.dynamoDbEndpoint,
  });
  const store = composeRegistry(client, runtime.tableName);
  const tokens = new DynamoDbTokenStore(client, runtime.tableName);
  await store.applyGroup(webGroup);
  return {
    runtime,
    store,
    tokens,
    connectUrl: (ip, extra = '') => `${runtime.url}/?group=web&namespace=shop&ip=${ip}${extra}`,
    token: async (namespace = 'shop', serviceAccount = 'web') => {
      const { token, stored } = createJoinToken({
        namespace,
        serviceAccount,
        ttlMs: 3_600_000,
        now: Date.now(),
      });
      await tokens.putToken(stored);
      return token;
    },
  };
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const entryRef = (ip: string) => ({ namespace: 'shop', name: `web-${ip}` });

describe('the local runtime, end to end', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness();
  });
  afterAll(async () => {
    await h.runtime.close();
  });

  it('registers the entry when an agent connects with a join token', async () => {
    const agent = await openClient(h.connectUrl('10.0.0.1'), bearer(await h.token()));
    const record = await h.store.getEntry(entryRef('10.0.0.1'));
    expect(record?.entry.spec.address).toBe('10.0.0.1');
    expect(record?.autoRegistrationGroup).toBe('web');
    expect(record?.connection?.connectedAt).toEqual(expect.any(Number));
    expect(record?.identity).toMatchObject({ namespace: 'shop', serviceAccount: 'web' });
    await agent.close();
  });

  it('keeps the entry connected through a make-before-break reconnect', async () => {
    const token = await h.token();
    const old = await openClient(h.connectUrl('10.0.0.2'), bearer(token));
    const replacement = await openClient(h.connectUrl('10.0.0.2'), bearer(token));
    await old.close();
    // The old connection's $disconnect has run once the entry no longer lists it.
    const record = await until(async () => {
      const current = await h.store.getEntry(entryRef('10.0.0.2'));
      return current?.connection?.connectionIds.length === 1 ? current : undefined;
    });
    expect(record.connection?.connectedAt).toEqual(expect.any(Number));
    expect(record.connection?.disconnectedAt).toBeUndefined();
    await replacement.close();
  });

  it('marks the entry disconnected when the agent closes, and sweeps it after the grace period', async () => {
    const agent = await openClient(h.connectUrl('10.0.0.3'), bearer(await h.token()));
    await agent.close();
    const disconnected = await until(async () => {
      const record = await h.store.getEntry(entryRef('10.0.0.3'));
      return record?.connection?.disconnectedAt !== undefined ? record : undefined;
    });
    expect(disconnected.connection?.connectedAt).toBeUndefined();
    // Within the grace period the sweeper leaves it alone.
    await h.runtime.sweepNow();
    expect(await h.store.getEntry(entryRef('10.0.0.3'))).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, GRACE_MS));
    const summary = await h.runtime.sweepNow();
    expect(summary.deleted).toBeGreaterThanOrEqual(1);
    expect(await h.store.getEntry(entryRef('10.0.0.3'))).toBeUndefined();
  });

  it('acknowledges a health report and sets the Healthy condition', async () => {
    const agent = await openClient(h.connectUrl('10.0.0.4'), bearer(await h.token()));
    expect(
      await agent.request({ action: 'health', healthy: false, message: 'probe failed' }),
    ).toEqual({
      action: 'health',
      ok: true,
    });
    const record = await h.store.getEntry(entryRef('10.0.0.4'));
    expect(record?.health).toMatchObject({ status: 'False', message: 'probe failed' });
    await agent.close();
  });

  it('describes the entry and the group probe to the agent', async () => {
    const agent = await openClient(h.connectUrl('10.0.0.5'), bearer(await h.token()));
    const reply = await agent.request({ action: 'describe' });
    expect(reply).toMatchObject({ action: 'describe', ok: true, probe: webGroup.spec.probe });
    expect((reply.entry as { metadata: { name: string } }).metadata.name).toBe('web-10.0.0.5');
    await agent.close();
  });

  it('answers ping with pong', async () => {
    const agent = await openClient(h.connectUrl('10.0.0.6'), bearer(await h.token()));
    expect(await agent.request({ action: 'ping' })).toEqual({ action: 'pong' });
    await agent.close();
  });

  it('refuses a connect without an ip with 400 naming the parameter', async () => {
    const refusal = await refusedUpgrade(
      `${h.runtime.url}/?group=web&namespace=shop`,
      bearer(await h.token()),
    );
    expect(refusal.statusCode).toBe(400);
    expect(refusal.body).toContain('ip');
  });

  it('refuses a connect without a token, or with an unknown one, with 401', async () => {
    expect((await refusedUpgrade(h.connectUrl('10.0.0.7'))).statusCode).toBe(401);
    const forged = createJoinToken({ namespace: 'shop', ttlMs: 60_000, now: Date.now() }).token;
    expect((await refusedUpgrade(h.connectUrl('10.0.0.7'), bearer(forged))).statusCode).toBe(401);
  });

  it('refuses a token of another namespace with 403', async () => {
    const refusal = await refusedUpgrade(
      h.connectUrl('10.0.0.8'),
      bearer(await h.token('billing')),
    );
    expect(refusal.statusCode).toBe(403);
  });

  it('refuses a connect to a missing group with 404', async () => {
    const refusal = await refusedUpgrade(
      `${h.runtime.url}/?group=nope&namespace=shop&ip=10.0.0.9`,
      bearer(await h.token()),
    );
    expect(refusal.statusCode).toBe(404);
    expect(refusal.body).toContain('cannot find WorkloadGroup shop/nope');
  });

  it('refuses with 409 to take over an entry made by hand', async () => {
    await h.store.applyEntry({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: 'web-10.0.0.10', namespace: 'shop' },
      spec: { address: '10.0.0.10' },
    });
    const refusal = await refusedUpgrade(h.connectUrl('10.0.0.10'), bearer(await h.token()));
    expect(refusal.statusCode).toBe(409);
    expect((await h.store.getEntry(entryRef('10.0.0.10')))?.autoRegistrationGroup).toBeUndefined();
  });
});

describe('one invocation of each function at a time (--function-concurrency 1)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness({ functionConcurrency: 1 });
  });
  afterAll(async () => {
    await h.runtime.close();
  });

  // Every event waits in line for its function; none is lost, and no function waits on itself:
  // $connect closing a replaced connection runs $disconnect, a function of its own.
  it('registers a burst, keeps every entry through make-before-break reconnects, and answers every health report', async () => {
    const token = await h.token();
    const ips = Array.from({ length: 8 }, (_, i) => `10.0.2.${i + 1}`);
    const first = await Promise.all(ips.map((ip) => openClient(h.connectUrl(ip), bearer(token))));
    for (const ip of ips) {
      expect((await h.store.getEntry(entryRef(ip)))?.connection?.connectionIds).toHaveLength(1);
    }

    const second = await Promise.all(ips.map((ip) => openClient(h.connectUrl(ip), bearer(token))));
    await Promise.all(first.map((client) => client.close()));
    for (const ip of ips) {
      const record = await until(async () => {
        const current = await h.store.getEntry(entryRef(ip));
        return current?.connection?.connectionIds.length === 1 ? current : undefined;
      });
      expect(record.connection?.disconnectedAt).toBeUndefined();
    }

    const acks = await Promise.all(
      second.map((client) => client.request({ action: 'health', healthy: true })),
    );
    expect(acks).toEqual(ips.map(() => ({ action: 'health', ok: true })));
    for (const ip of ips) {
      expect((await h.store.getEntry(entryRef(ip)))?.health).toMatchObject({ status: 'True' });
    }
    await Promise.all(second.map((client) => client.close()));
  });
});

describe('local storage', () => {
  it.skipIf(testBackend() === 'dynamodb-local')(
    'keeps the registry in the data dir across a restart',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'registrar-runtime-'));
      try {
        // A grace period longer than any restart: the second runtime's first sweep (at start)
        // must find the entry, not delete it (800 ms passed while a busy machine restarted).
        const keep = { gracePeriodMs: 10 * 60_000 };
        const first = await harness({ memory: false, dataDir, writeLocalJson: true, ...keep });
        const local = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8'));
        expect(local).toEqual({
          url: first.runtime.url,
          managementUrl: first.runtime.managementUrl,
          dynamoDbEndpoint: first.runtime.dynamoDbEndpoint,
          tableName: first.runtime.tableName,
          region: 'us-east-1',
        });
        const agent = await openClient(first.connectUrl('10.0.1.1'), bearer(await first.token()));
        await first.runtime.close();
        expect((await agent.closed).code).toBe(1001);
        expect(existsSync(join(dataDir, 'local.json'))).toBe(false);

        const second = await harness({
          memory: false,
          dataDir,
          tableName: first.runtime.tableName,
          ...keep,
        });
        const record = await second.store.getEntry(entryRef('10.0.1.1'));
        // Closing the runtime gave the connection its $disconnect before the store stopped.
        expect(record?.connection?.disconnectedAt).toEqual(expect.any(Number));
        await second.runtime.close();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it('writes nothing to disk with memory: true', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'registrar-memory-'));
    try {
      const h = await harness({ memory: true, dataDir });
      const agent = await openClient(h.connectUrl('10.0.2.1'), bearer(await h.token()));
      expect(await h.store.getEntry(entryRef('10.0.2.1'))).toBeDefined();
      await agent.close();
      await h.runtime.close();
      expect(readdirSync(dataDir)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the sweep schedule', () => {
  it('tells onSweepEnd of each run once, even when the callback throws', async () => {
    const told: SweepRunOutcome[] = [];
    const h = await harness({
      sweepIntervalMs: 50,
      onSweepEnd: (run) => {
        told.push(run);
        if (told.length === 1) throw new Error('a callback that throws');
      },
    });
    try {
      await until(async () => (told.length >= 3 ? true : undefined));
      // Before: the throw after a successful run was caught and told again as a failed run.
      expect(told[0]?.summary).toBeDefined();
      expect(told[0]?.error).toBeUndefined();
      const starts = told.map((run) => run.startedAt);
      expect(new Set(starts).size).toBe(starts.length);
    } finally {
      await h.runtime.close();
    }
  });
});

async function until<T>(check: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met within timeout');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
