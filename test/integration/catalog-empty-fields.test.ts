import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import { createAuthorizeHandler } from '../../functions/authorize.ts';
import { createConnectHandler } from '../../functions/connect.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { readConfig } from '../../lib/config.ts';
import type { Dependencies } from '../../lib/dependencies.ts';
import type { AuthorizerResult } from '../../lib/protocol/websocket-events.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * DESIGN rule 5: an empty string in an optional field means unset, as Kubernetes reads it.
 * `serviceAccount: ""` in a group's template is applied as no service account, so the group
 * accepts any token of its namespace; over a real table (dynalite), through the CLI and the
 * authorizer and `$connect` handlers as API Gateway calls them.
 */

const NOW = Date.UTC(2026, 2, 1, 12, 0, 0);
const HOUR = 3_600_000;
const METHOD_ARN = 'arn:aws:execute-api:us-east-1:123456789012:api1/prod/$connect';

let dynamo: TestDynamo;
let deps: Dependencies;
let nextConnection = 0;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  deps = {
    ...NO_CAPABILITIES,
    config: readConfig({
      REGISTRAR_TABLE: dynamo.tableName,
      REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
      REGISTRAR_CONTROLLER: 'registrar-test',
    }),
    store: composeRegistry(dynamo.client, dynamo.tableName),
    tokens: new DynamoDbTokenStore(dynamo.client, dynamo.tableName),
    ...sweeperRecordsInMemory(),
    now: () => NOW,
  };
});

afterAll(async () => {
  await dynamo?.close();
});

async function registrar(
  args: string[],
  stdin = '',
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from([stdin]),
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: tmpdir(),
    now: () => NOW,
  });
  return { code, stdout, stderr };
}

async function issueToken(serviceAccount?: string): Promise<string> {
  const { token, stored } = createJoinToken({
    namespace: 'shop',
    ttlMs: HOUR,
    now: NOW,
    ...(serviceAccount ? { serviceAccount } : {}),
  });
  await deps.tokens.putToken(stored);
  return token;
}

/** What API Gateway does with an upgrade: the authorizer, then `$connect` with its context. */
async function gatewayConnect(group: string, ip: string, token: string): Promise<number> {
  nextConnection += 1;
  const connectionId = `conn-${nextConnection}=`;
  const query = { group, namespace: 'shop', ip };
  const events = {
    queryStringParameters: query,
    multiValueQueryStringParameters: Object.fromEntries(
      Object.entries(query).map(([key, value]) => [key, [value]]),
    ),
  };
  const requestContext = {
    routeKey: '$connect',
    eventType: 'CONNECT' as const,
    connectionId,
    connectedAt: NOW,
    requestTimeEpoch: NOW,
    requestId: `r-${connectionId}`,
    domainName: 'api1.execute-api.us-east-1.amazonaws.com',
    stage: 'prod',
    apiId: 'api1',
  };
  let decision: AuthorizerResult;
  try {
    decision = await createAuthorizeHandler(deps)(
      {
        type: 'REQUEST',
        methodArn: METHOD_ARN,
        headers: { Authorization: `Bearer ${token}` },
        ...events,
        requestContext,
      },
      lambdaContext('authorize'),
    );
  } catch {
    return 401;
  }
  if (!decision.policyDocument.Statement.every((s) => s.Effect === 'Allow')) return 403;
  const authorizer = { ...decision.context, principalId: decision.principalId };
  const result = await createConnectHandler(deps)(
    { requestContext: { ...requestContext, authorizer }, headers: {}, ...events },
    lambdaContext('connect'),
  );
  return result.statusCode;
}

function group(name: string, serviceAccount: string): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: ${name}, namespace: shop}
spec:
  template:
    ports: {http: 8080}
    serviceAccount: ${JSON.stringify(serviceAccount)}
    network: ""
    locality: ""
`;
}

describe('serviceAccount: "" in a WorkloadGroup template', () => {
  it('is applied as unset, and the group then accepts a token without a service account', async () => {
    const applied = await registrar(['apply', '-f', '-'], group('open', ''));
    expect(applied.stderr).toBe('');
    expect(applied.stdout).toBe('workloadgroup.networking.istio.io/open created\n');
    const stored = await deps.store.getGroup({ namespace: 'shop', name: 'open' });
    expect(stored?.group.spec.template).toEqual({ ports: { http: 8080 } });
    expect(stored?.group.spec.template).not.toHaveProperty('serviceAccount');

    expect(await gatewayConnect('open', '10.3.0.1', await issueToken())).toBe(200);
    const entry = await deps.store.getEntry({ namespace: 'shop', name: 'open-10.3.0.1' });
    expect(entry?.entry.spec).toEqual({
      address: '10.3.0.1',
      ports: { http: 8080 },
      labels: {},
    });
  });

  it('differs from a service account that is set: that group refuses a token without one', async () => {
    const applied = await registrar(['apply', '-f', '-'], group('closed', 'web-sa'));
    expect(applied.code).toBe(0);
    expect(await gatewayConnect('closed', '10.3.0.2', await issueToken())).toBe(403);
    expect(await gatewayConnect('closed', '10.3.0.3', await issueToken('web-sa'))).toBe(200);
  });
});

describe('empty optional fields of a hand-made WorkloadEntry', () => {
  it('are applied as unset, and applying the entry again is unchanged', async () => {
    const input = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: db-1, namespace: ""}
spec: {address: 10.0.0.5, serviceAccount: "", network: "", locality: ""}
`;
    const first = await registrar(['apply', '-f', '-', '-n', 'shop'], input);
    expect(first.stderr).toBe('');
    expect(first.stdout).toBe('workloadentry.networking.istio.io/db-1 created\n');
    expect((await deps.store.getEntry({ namespace: 'shop', name: 'db-1' }))?.entry.spec).toEqual({
      address: '10.0.0.5',
    });
    const again = await registrar(['apply', '-f', '-', '-n', 'shop'], input);
    expect(again.stdout).toBe('workloadentry.networking.istio.io/db-1 unchanged\n');
  });
});
