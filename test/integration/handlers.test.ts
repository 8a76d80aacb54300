import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAuthorizeHandler } from '../../functions/authorize.ts';
import { createConnectHandler } from '../../functions/connect.ts';
import { createDisconnectHandler } from '../../functions/disconnect.ts';
import { createMessageHandler } from '../../functions/message.ts';
import { createSweeperHandler } from '../../functions/sweeper.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { readConfig } from '../../lib/config.ts';
import type { Dependencies } from '../../lib/dependencies.ts';
import type { WorkloadEntry, WorkloadGroup } from '../../lib/domain/model.ts';
import { logger, metrics } from '../../lib/observability.ts';
import type {
  AuthorizerContext,
  AuthorizerResult,
  WebSocketResult,
} from '../../lib/protocol/websocket-events.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * The five handlers driven with API Gateway-shaped events against the real DynamoDB adapter
 * (dynalite). `gatewayConnect` plays API Gateway's part: authorizer first, then `$connect`
 * with the authorizer's context, so identity reaches the handler only the way it does in AWS.
 */

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const METHOD_ARN = 'arn:aws:execute-api:us-east-1:123456789012:api1/prod/$connect';
const WRITES = ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems'];

let dynamo: TestDynamo;
let deps: Dependencies;
let counter: RequestCounter;
let clock = T0;
let nextConnection = 0;
/** What API Gateway keeps of each accepted connection and repeats on its later events. */
const connections = new Map<string, { connectedAt: number; authorizer: AuthorizerContext }>();

const webGroup: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'web', namespace: 'shop' },
  spec: {
    metadata: { labels: { app: 'web' }, annotations: { team: 'payments' } },
    template: { ports: { http: 8080 }, serviceAccount: 'web-sa', labels: { version: 'v1' } },
    probe: { periodSeconds: 5, httpGet: { port: 8080, path: '/ready' } },
  },
};

const openGroup: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'batch', namespace: 'shop' },
  spec: { template: { ports: { grpc: 9000 } } },
};

beforeAll(async () => {
  dynamo = await startTestDynamo();
  counter = countRequests(dynamo.client);
  deps = {
    ...NO_CAPABILITIES,
    config: readConfig({
      REGISTRAR_TABLE: dynamo.tableName,
      REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
      REGISTRAR_CONTROLLER: 'registrar-test',
      REGISTRAR_SWEEP_DELETES_PER_SECOND: '1000',
    }),
    store: composeRegistry(dynamo.client, dynamo.tableName),
    tokens: new DynamoDbTokenStore(dynamo.client, dynamo.tableName),
    ...sweeperRecordsInMemory(),
    now: () => clock,
  };
  await deps.store.applyGroup(webGroup);
  await deps.store.applyGroup(openGroup);
});

afterAll(async () => {
  await dynamo?.close();
});

beforeEach(() => {
  clock = T0;
  counter.reset();
});

async function issueToken(
  options: { namespace?: string; serviceAccount?: string; ttlMs?: number } = {},
): Promise<{ token: string; id: string }> {
  const { token, stored } = createJoinToken({
    namespace: options.namespace ?? 'shop',
    ttlMs: options.ttlMs ?? HOUR,
    now: clock,
    ...(options.serviceAccount ? { serviceAccount: options.serviceAccount } : {}),
  });
  await deps.tokens.putToken(stored);
  return { token, id: stored.id };
}

function newConnectionId(): string {
  nextConnection += 1;
  return `conn-${nextConnection}=`;
}

function requestContext(connectionId: string, routeKey: string, at: number) {
  return {
    routeKey,
    connectionId,
    connectedAt: at,
    requestTimeEpoch: at,
    requestId: `r-${routeKey}-${at}`,
    domainName: 'api1.execute-api.us-east-1.amazonaws.com',
    stage: 'prod',
    apiId: 'api1',
  };
}

type Query = Record<string, string | string[]>;

function queryMaps(query: Query) {
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const [key, value] of Object.entries(query)) {
    const values = Array.isArray(value) ? value : [value];
    multi[key] = values;
    single[key] = values[values.length - 1] ?? '';
  }
  return { queryStringParameters: single, multiValueQueryStringParameters: multi };
}

async function authorize(
  connectionId: string,
  query: Query,
  headers: Record<string, string>,
): Promise<AuthorizerResult> {
  const handler = createAuthorizeHandler(deps);
  return handler(
    {
      type: 'REQUEST',
      methodArn: METHOD_ARN,
      headers,
      ...queryMaps(query),
      requestContext: { ...requestContext(connectionId, '$connect', clock), eventType: 'CONNECT' },
    },
    lambdaContext('authorize'),
  );
}

async function connectWithContext(
  connectionId: string,
  query: Query,
  authorizer: AuthorizerContext | null,
): Promise<WebSocketResult> {
  return createConnectHandler(deps)(
    {
      requestContext: {
        ...requestContext(connectionId, '$connect', clock),
        eventType: 'CONNECT',
        authorizer,
      },
      headers: {},
      ...queryMaps(query),
    },
    lambdaContext('connect'),
  );
}

/** What API Gateway does with an upgrade: authorizer, then `$connect` with its context. */
async function gatewayConnect(
  query: Query,
  options: { token?: string; headers?: Record<string, string>; connectionId?: string } = {},
): Promise<{ statusCode: number; body?: string; connectionId: string }> {
  const connectionId = options.connectionId ?? newConnectionId();
  const headers =
    options.headers ?? (options.token ? { Authorization: `Bearer ${options.token}` } : {});
  let decision: AuthorizerResult;
  try {
    decision = await authorize(connectionId, query, headers);
  } catch (error) {
    return { statusCode: (error as Error).message === 'Unauthorized' ? 401 : 500, connectionId };
  }
  const allowed = decision.policyDocument.Statement.every((s) => s.Effect === 'Allow');
  if (!allowed) return { statusCode: 403, connectionId };
  const context = { ...decision.context, principalId: decision.principalId };
  const result = await connectWithContext(connectionId, query, context);
  if (result.statusCode === 200)
    connections.set(connectionId, { connectedAt: clock, authorizer: context });
  return { ...result, connectionId };
}

/** The connection's later events carry its connect time and the authorizer's context. */
function laterContext(connectionId: string, routeKey: string) {
  const known = connections.get(connectionId);
  return {
    ...requestContext(connectionId, routeKey, clock),
    ...(known ? { connectedAt: known.connectedAt, authorizer: known.authorizer } : {}),
  };
}

async function disconnect(connectionId: string): Promise<WebSocketResult> {
  return createDisconnectHandler(deps)(
    {
      requestContext: { ...laterContext(connectionId, '$disconnect'), eventType: 'DISCONNECT' },
    },
    lambdaContext('disconnect'),
  );
}

async function send(connectionId: string, body: string, routeKey = '$default') {
  const result = await createMessageHandler(deps)(
    {
      requestContext: { ...laterContext(connectionId, routeKey), eventType: 'MESSAGE' },
      body,
      isBase64Encoded: false,
    },
    lambdaContext('message'),
  );
  return { statusCode: result.statusCode, reply: JSON.parse(result.body ?? 'null') };
}

function writes(): number {
  const counts = counter.counts();
  return WRITES.reduce((sum, command) => sum + (counts[command] ?? 0), 0);
}

async function itemKeys(): Promise<string[]> {
  const { Items = [] } = await dynamo.client.send(new ScanCommand({ TableName: dynamo.tableName }));
  return Items.map((item) => `${item.pk}|${item.sk}`).sort();
}

async function entry(name: string) {
  return deps.store.getEntry({ namespace: 'shop', name });
}

const WEB = { group: 'web', namespace: 'shop' };

describe('identity on $connect', () => {
  it('answers 401 without a token and writes nothing', async () => {
    const before = await itemKeys();
    counter.reset();
    const result = await gatewayConnect({ ...WEB, ip: '10.1.0.1' });
    expect(result.statusCode).toBe(401);
    expect(writes()).toBe(0);
    expect(await itemKeys()).toEqual(before);
  });

  it('answers 401 for a token the registry does not know', async () => {
    const { token } = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: clock });
    const result = await gatewayConnect({ ...WEB, ip: '10.1.0.2' }, { token });
    expect(result.statusCode).toBe(401);
    expect(await entry('web-10.1.0.2')).toBeUndefined();
  });

  it('answers 401 for a malformed bearer token and a non-bearer scheme', async () => {
    expect(
      (await gatewayConnect({ ...WEB, ip: '10.1.0.3' }, { token: 'wrt.nope' })).statusCode,
    ).toBe(401);
    const basic = { Authorization: 'Basic dXNlcjpwYXNz' };
    expect((await gatewayConnect({ ...WEB, ip: '10.1.0.3' }, { headers: basic })).statusCode).toBe(
      401,
    );
  });

  it('answers 401 for a revoked token', async () => {
    const { token, id } = await issueToken({ serviceAccount: 'web-sa' });
    await deps.tokens.revokeToken(id, clock);
    const result = await gatewayConnect({ ...WEB, ip: '10.1.0.4' }, { token });
    expect(result.statusCode).toBe(401);
    expect(await entry('web-10.1.0.4')).toBeUndefined();
  });

  it('answers 401 for an expired token', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa', ttlMs: MINUTE });
    clock = T0 + MINUTE;
    const result = await gatewayConnect({ ...WEB, ip: '10.1.0.5' }, { token });
    expect(result.statusCode).toBe(401);
    expect(await entry('web-10.1.0.5')).toBeUndefined();
  });

  it('accepts the header name in any case', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const headers = { authorization: `bearer ${token}` };
    const result = await gatewayConnect({ ...WEB, ip: '10.1.0.6' }, { headers });
    expect(result.statusCode).toBe(200);
  });

  it('denies (403) a token for another namespace in the authorizer', async () => {
    const { token } = await issueToken({ namespace: 'billing', serviceAccount: 'web-sa' });
    counter.reset();
    const result = await gatewayConnect({ ...WEB, ip: '10.1.0.7' }, { token });
    expect(result.statusCode).toBe(403);
    expect(writes()).toBe(0);
  });

  it('refuses (403) in $connect too when the verified namespace differs from the request', async () => {
    const context = { principal: 'token:abc', namespace: 'billing', principalId: 'token:abc' };
    const result = await connectWithContext(newConnectionId(), { ...WEB, ip: '10.1.0.8' }, context);
    expect(result.statusCode).toBe(403);
    expect(JSON.parse(result.body ?? '{}').error.code).toBe('Forbidden');
    expect(await entry('web-10.1.0.8')).toBeUndefined();
  });

  it('answers 401 when $connect runs without an authorizer context', async () => {
    const result = await connectWithContext(newConnectionId(), { ...WEB, ip: '10.1.0.9' }, null);
    expect(result.statusCode).toBe(401);
  });

  it('refuses (403) a token whose service account is not the template one', async () => {
    const { token } = await issueToken({ serviceAccount: 'other-sa' });
    counter.reset();
    const result = await gatewayConnect({ ...WEB, ip: '10.1.0.10' }, { token });
    expect(result.statusCode).toBe(403);
    expect(JSON.parse(result.body ?? '{}').error.message).toContain("runs as 'web-sa'");
    expect(writes()).toBe(0);
  });

  it('refuses (403) a namespace-wide token for a template that names a service account', async () => {
    const { token } = await issueToken();
    const result = await gatewayConnect({ ...WEB, ip: '10.1.0.11' }, { token });
    expect(result.statusCode).toBe(403);
  });

  it('lets a template without service account accept any token of its namespace', async () => {
    const plain = await issueToken();
    const scoped = await issueToken({ serviceAccount: 'anything' });
    const query = { group: 'batch', namespace: 'shop' };
    expect(
      (await gatewayConnect({ ...query, ip: '10.1.0.12' }, { token: plain.token })).statusCode,
    ).toBe(200);
    expect(
      (await gatewayConnect({ ...query, ip: '10.1.0.13' }, { token: scoped.token })).statusCode,
    ).toBe(200);
  });
});

describe('registration', () => {
  it('creates the entry from the group and records the verified identity', async () => {
    const { token, id } = await issueToken({ serviceAccount: 'web-sa' });
    const result = await gatewayConnect(
      {
        ...WEB,
        ip: ['10.2.0.1', '10.2.0.2'],
        label: ['rack=r1', 'istio-locality=x'],
        locality: 'eu/eu-1',
      },
      { token },
    );
    expect(result.statusCode).toBe(200);
    const record = await entry('web-10.2.0.1');
    expect(record?.entry.spec).toMatchObject({
      address: '10.2.0.1',
      serviceAccount: 'web-sa',
      locality: 'eu/eu-1',
      labels: { version: 'v1', app: 'web', rack: 'r1' },
    });
    expect(record?.entry.spec.labels).not.toHaveProperty('istio-locality');
    expect(record?.autoRegistrationGroup).toBe('web');
    expect(record?.healthChecksEnabled).toBe(true);
    expect(record?.groupGeneration).toBe(1);
    expect(record?.identity).toEqual({
      principal: `token:${id}`,
      namespace: 'shop',
      serviceAccount: 'web-sa',
    });
    expect(record?.connection).toMatchObject({ controller: 'registrar-test', connectedAt: T0 });
  });

  it('answers 404 naming the group when it does not exist, and writes nothing', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    counter.reset();
    const result = await gatewayConnect(
      { group: 'nope', namespace: 'shop', ip: '10.2.0.3' },
      { token },
    );
    expect(result.statusCode).toBe(404);
    expect(JSON.parse(result.body ?? '{}')).toEqual({
      ok: false,
      error: { code: 'NotFound', message: 'cannot find WorkloadGroup shop/nope' },
    });
    expect(writes()).toBe(0);
  });

  it.each([
    [{ namespace: 'shop', ip: '10.2.0.4' }, "missing query parameter 'group'"],
    [{ ...WEB }, "missing query parameter 'ip'"],
    [{ ...WEB, ip: '10.2.0.999' }, "invalid ip '10.2.0.999'"],
    [{ ...WEB, ip: '10.2.0.5', label: 'no-equals' }, "invalid label 'no-equals'"],
    [{ ...WEB, ip: '10.2.0.6', locality: 'a/b/c/d' }, "invalid locality 'a/b/c/d'"],
  ])('answers 400 for %j naming the field, and writes nothing', async (query, message) => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const before = await itemKeys();
    counter.reset();
    const result = await gatewayConnect(query as Query, { token });
    expect(result.statusCode).toBe(400);
    expect(JSON.parse(result.body ?? '{}').error.message).toContain(message);
    expect(writes()).toBe(0);
    expect(await itemKeys()).toEqual(before);
  });

  it('refuses (409) to take over an entry that was made by hand', async () => {
    const handMade: WorkloadEntry = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: 'web-10.2.0.7', namespace: 'shop' },
      spec: { address: '10.2.0.7' },
    };
    await deps.store.applyEntry(handMade);
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const result = await gatewayConnect({ ...WEB, ip: '10.2.0.7' }, { token });
    expect(result.statusCode).toBe(409);
    expect((await entry('web-10.2.0.7'))?.autoRegistrationGroup).toBeUndefined();
  });

  it('keeps the entry connected when the old connection closes after a reconnect', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const first = await gatewayConnect({ ...WEB, ip: '10.2.0.8' }, { token });
    clock = T0 + 30 * MINUTE;
    const second = await gatewayConnect({ ...WEB, ip: '10.2.0.8' }, { token });
    expect(second.statusCode).toBe(200);
    clock = T0 + 30 * MINUTE + 1000;
    await disconnect(first.connectionId);
    const record = await entry('web-10.2.0.8');
    expect(record?.connection?.connectedAt).toBe(T0 + 30 * MINUTE);
    expect(record?.connection?.disconnectedAt).toBeUndefined();
  });

  it('marks the entry disconnected when its last connection closes', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const { connectionId } = await gatewayConnect({ ...WEB, ip: '10.2.0.9' }, { token });
    clock = T0 + 5000;
    expect((await disconnect(connectionId)).statusCode).toBe(200);
    const record = await entry('web-10.2.0.9');
    expect(record?.connection).toMatchObject({
      disconnectedAt: T0 + 5000,
      controller: 'registrar-test',
    });
    expect(record?.connection?.connectedAt).toBeUndefined();
  });

  it('writes nothing for the disconnect of a connection that registered nothing', async () => {
    counter.reset();
    expect((await disconnect('never-connected=')).statusCode).toBe(200);
    expect(writes()).toBe(0);
  });
});

describe('messages', () => {
  it('acknowledges a health report and sets the Healthy condition', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const { connectionId } = await gatewayConnect({ ...WEB, ip: '10.3.0.1' }, { token });
    clock = T0 + 1000;
    const answer = await send(
      connectionId,
      '{"action":"health","healthy":false,"message":"503"}',
      'health',
    );
    expect(answer).toEqual({ statusCode: 200, reply: { action: 'health', ok: true } });
    expect((await entry('web-10.3.0.1'))?.health).toMatchObject({
      status: 'False',
      message: '503',
    });
  });

  it('drops the message of a healthy report', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const { connectionId } = await gatewayConnect({ ...WEB, ip: '10.3.0.2' }, { token });
    await send(connectionId, '{"action":"health","healthy":true,"message":"all good"}', 'health');
    const health = (await entry('web-10.3.0.2'))?.health;
    expect(health?.status).toBe('True');
    expect(health?.message).toBeUndefined();
  });

  it('lands health from every connection that holds the entry, newest report first', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const first = await gatewayConnect({ ...WEB, ip: '10.3.0.3' }, { token });
    clock = T0 + 1000;
    const second = await gatewayConnect({ ...WEB, ip: '10.3.0.3' }, { token });
    clock = T0 + 2000;
    await send(second.connectionId, '{"action":"health","healthy":true}', 'health');
    clock = T0 + 3000;
    // The first connection still holds the entry (its $disconnect has not run): it counts.
    const later = await send(first.connectionId, '{"action":"health","healthy":false}', 'health');
    expect(later.reply).toEqual({ action: 'health', ok: true });
    expect((await entry('web-10.3.0.3'))?.health?.status).toBe('False');
  });

  it('tells a connection whose $disconnect ran that it holds nothing, and changes nothing', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const old = await gatewayConnect({ ...WEB, ip: '10.3.0.4' }, { token });
    clock = T0 + 1000;
    const fresh = await gatewayConnect({ ...WEB, ip: '10.3.0.4' }, { token });
    await send(fresh.connectionId, '{"action":"health","healthy":true}', 'health');
    clock = T0 + 2000;
    await disconnect(old.connectionId);
    clock = T0 + 3000;
    const late = await send(old.connectionId, '{"action":"health","healthy":false}', 'health');
    expect(late.reply).toMatchObject({ ok: false, error: { code: 'NotRegistered' } });
    expect((await entry('web-10.3.0.4'))?.health?.status).toBe('True');
  });

  it("describes the connection's entry with the group's probe", async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const { connectionId } = await gatewayConnect({ ...WEB, ip: '10.3.0.4' }, { token });
    const { statusCode, reply } = await send(connectionId, '{"action":"describe"}', 'describe');
    expect(statusCode).toBe(200);
    expect(reply).toMatchObject({
      action: 'describe',
      ok: true,
      probe: webGroup.spec.probe,
      // The agent logs it, so its lines can be matched with the registrar's.
      connectionId,
    });
    expect(reply.entry.metadata.name).toBe('web-10.3.0.4');
    expect(reply.entry.metadata.annotations).toMatchObject({
      'istio.io/autoRegistrationGroup': 'web',
      'proxy.istio.io/health-checks-enabled': 'true',
      team: 'payments',
    });
  });

  it('describes with probe null when the group has none', async () => {
    const { token } = await issueToken();
    const { connectionId } = await gatewayConnect(
      { group: 'batch', namespace: 'shop', ip: '10.3.0.5' },
      { token },
    );
    const { reply } = await send(connectionId, '{"action":"describe"}', 'describe');
    expect(reply.probe).toBeNull();
  });

  it('answers non-JSON on $default with an InvalidJson error reply', async () => {
    const { statusCode, reply } = await send('any=', 'hello');
    expect(statusCode).toBe(200);
    expect(reply).toMatchObject({ ok: false, error: { code: 'InvalidJson' } });
  });

  it('answers an unknown action and an oversized message with their codes', async () => {
    expect((await send('any=', '{"action":"reboot"}')).reply.error.code).toBe('UnknownAction');
    const big = JSON.stringify({ action: 'health', healthy: true, message: 'x'.repeat(40_000) });
    expect((await send('any=', big, 'health')).reply.error.code).toBe('MessageTooLarge');
  });

  it('tells a connection that registered nothing to reconnect, and writes nothing', async () => {
    counter.reset();
    const { reply } = await send('stranger=', '{"action":"health","healthy":true}', 'health');
    expect(reply).toMatchObject({ ok: false, error: { code: 'NotRegistered' } });
    expect(writes()).toBe(0);
  });
});

describe('sweeper', () => {
  it('deletes an entry disconnected for longer than the grace period', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const { connectionId } = await gatewayConnect({ ...WEB, ip: '10.4.0.1' }, { token });
    clock = T0 + 1000;
    await disconnect(connectionId);
    clock = T0 + 1000 + deps.config.sweep.gracePeriodMs;
    const summary = await createSweeperHandler(deps)({}, lambdaContext('sweeper'));
    expect(summary.deleted).toBeGreaterThanOrEqual(1);
    expect(await entry('web-10.4.0.1')).toBeUndefined();
  });

  it('leaves an entry that is still inside the grace period', async () => {
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const { connectionId } = await gatewayConnect({ ...WEB, ip: '10.4.0.2' }, { token });
    clock = T0 + 1000;
    await disconnect(connectionId);
    clock = T0 + 1000 + deps.config.sweep.gracePeriodMs - 1;
    await createSweeperHandler(deps)({}, lambdaContext('sweeper'));
    expect(await entry('web-10.4.0.2')).toBeDefined();
  });
});

describe('observability', () => {
  it('counts Registered for a new entry and Reconnected for a known one', async () => {
    const added = vi.spyOn(metrics, 'addMetric');
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    await gatewayConnect({ ...WEB, ip: '10.5.0.1' }, { token });
    clock = T0 + 1000;
    await gatewayConnect({ ...WEB, ip: '10.5.0.1' }, { token });
    const names = added.mock.calls.map(([name]) => name);
    expect(names).toContain('Registered');
    expect(names).toContain('Reconnected');
    added.mockRestore();
  });

  it('never logs the secret of a join token, accepted or refused', async () => {
    const calls: unknown[] = [];
    const spies = (['debug', 'info', 'warn', 'error'] as const).map((level) =>
      vi.spyOn(logger, level).mockImplementation((...args: unknown[]) => void calls.push(args)),
    );
    const { token } = await issueToken({ serviceAccount: 'web-sa' });
    const secret = token.split('.')[2] ?? '';
    await gatewayConnect({ ...WEB, ip: '10.5.0.2' }, { token });
    await gatewayConnect({ ...WEB, ip: '10.5.0.2' }, { token: `${token}x` });
    await gatewayConnect({ namespace: 'billing', group: 'web', ip: '10.5.0.2' }, { token });
    for (const spy of spies) spy.mockRestore();
    expect(calls.length).toBeGreaterThan(0);
    expect(JSON.stringify(calls)).not.toContain(secret);
  });
});

describe('handler entry points', () => {
  it('import without configuration and fail the first invocation naming the variable', async () => {
    vi.stubEnv('REGISTRAR_TABLE', '');
    const { handler } = await import('../../functions/connect.ts');
    const event = { requestContext: requestContext('c=', '$connect', clock) };
    await expect(handler(event, lambdaContext('connect'))).rejects.toThrow(/REGISTRAR_TABLE/);
    vi.unstubAllEnvs();
  });
});
