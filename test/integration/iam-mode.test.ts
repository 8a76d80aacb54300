import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import { createConnectHandler } from '../../functions/connect.ts';
import { readConfig } from '../../lib/config.ts';
import type { Dependencies } from '../../lib/dependencies.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import { DynamoDbPolicyStore } from '../../lib/store/dynamodb-policy-store.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * IAM mode over a real table (dynalite): the operator allows a role with the CLI, and the
 * connect handler receives what API Gateway passes after its SigV4 check
 * (`requestContext.identity.userArn`). API Gateway's own signature check cannot run here;
 * the event stands in for its result.
 */

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const ROLE = 'arn:aws:iam::123456789012:role/web-vm';
const SESSION = 'arn:aws:sts::123456789012:assumed-role/web-vm/i-0abc123def4567890';

let dynamo: TestDynamo;
let deps: Dependencies;
let policies: DynamoDbPolicyStore;
let connections = 0;

const webGroup: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { template: { ports: { http: 8080 }, serviceAccount: 'web-sa' } },
};
const batchGroup: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'batch', namespace: 'shop' },
  spec: { template: { ports: { grpc: 9000 } } },
};

beforeAll(async () => {
  dynamo = await startTestDynamo();
  policies = new DynamoDbPolicyStore(dynamo.client, dynamo.tableName);
  deps = {
    ...NO_CAPABILITIES,
    config: readConfig({
      REGISTRAR_TABLE: dynamo.tableName,
      REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
      REGISTRAR_AUTH_MODE: 'iam',
      // These connects carry no instance identity document: the policy is what is tested.
      REGISTRAR_INSTANCE_ATTESTATION: 'optional',
    }),
    store: composeRegistry(dynamo.client, dynamo.tableName),
    tokens: new DynamoDbTokenStore(dynamo.client, dynamo.tableName),
    policies,
    ...sweeperRecordsInMemory(),
    now: () => T0,
  };
  await deps.store.applyGroup(webGroup);
  await deps.store.applyGroup(batchGroup);
});

afterAll(async () => {
  await dynamo?.close();
});

beforeEach(async () => {
  for (const rule of await policies.listPolicies()) {
    await policies.deletePolicy(rule.roleArn, rule.namespace);
  }
});

async function registrar(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: (async function* () {})(),
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: process.cwd(),
    now: () => T0,
  });
  return { code, stdout, stderr };
}

/** `$connect` as API Gateway invokes it after verifying the SigV4 signature. */
async function iamConnect(group: string, ip: string, userArn: string | null = SESSION) {
  connections += 1;
  const at = T0 + connections;
  return createConnectHandler(deps)(
    {
      requestContext: {
        routeKey: '$connect',
        eventType: 'CONNECT',
        connectionId: `iam-${connections}=`,
        connectedAt: at,
        requestTimeEpoch: at,
        requestId: `r-${connections}`,
        domainName: 'api1.execute-api.us-east-1.amazonaws.com',
        stage: 'v1',
        apiId: 'api1',
        identity: { sourceIp: ip, userArn },
      },
      headers: {},
      queryStringParameters: { group, namespace: 'shop', ip },
      multiValueQueryStringParameters: { group: [group], namespace: ['shop'], ip: [ip] },
    },
    lambdaContext('connect'),
  );
}

describe('IAM mode', () => {
  it('refuses an instance role that no policy allows (deny by default)', async () => {
    const result = await iamConnect('batch', '10.0.0.1');
    expect(result.statusCode).toBe(403);
    expect(result.body).toContain(`registrar policy allow --role-arn ${ROLE} -n shop`);
  });

  it('registers the VM once the operator allows its role for the namespace', async () => {
    expect((await registrar(['policy', 'allow', '--role-arn', ROLE, '-n', 'shop'])).code).toBe(0);
    expect((await iamConnect('batch', '10.0.0.2')).statusCode).toBe(200);
    const entry = await deps.store.getEntry({ namespace: 'shop', name: 'batch-10.0.0.2' });
    expect(entry).toBeDefined();
  });

  it('stores the rule for a role given with a path under the session-visible ARN', async () => {
    await registrar([
      'policy',
      'allow',
      '--role-arn',
      'arn:aws:iam::123456789012:role/ops/web-vm',
      '-n',
      'shop',
    ]);
    expect(await policies.getPolicy(ROLE, 'shop')).toMatchObject({ roleArn: ROLE });
  });

  it('refuses a group running as a service account the policy does not name', async () => {
    await registrar(['policy', 'allow', '--role-arn', ROLE, '-n', 'shop']);
    const result = await iamConnect('web', '10.0.0.3');
    expect(result.statusCode).toBe(403);
    expect(result.body).toContain("runs as 'web-sa'");
  });

  it('registers into that group when the policy names its service account', async () => {
    await registrar([
      'policy',
      'allow',
      '--role-arn',
      ROLE,
      '-n',
      'shop',
      '--service-account',
      'web-sa',
    ]);
    expect((await iamConnect('web', '10.0.0.4')).statusCode).toBe(200);
  });

  it('refuses the next connect after the policy is revoked', async () => {
    await registrar(['policy', 'allow', '--role-arn', ROLE, '-n', 'shop']);
    expect((await iamConnect('batch', '10.0.0.5')).statusCode).toBe(200);
    expect((await registrar(['policy', 'revoke', '--role-arn', ROLE, '-n', 'shop'])).code).toBe(0);
    expect((await iamConnect('batch', '10.0.0.5')).statusCode).toBe(403);
  });

  it('fails closed: with the attestation variable unset, an allowed role without a document is refused 403', async () => {
    await registrar(['policy', 'allow', '--role-arn', ROLE, '-n', 'shop']);
    const unset = {
      ...deps,
      config: readConfig({
        REGISTRAR_TABLE: dynamo.tableName,
        REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
        REGISTRAR_AUTH_MODE: 'iam',
      }),
    };
    expect(unset.config.instanceAttestation).toBe('required');
    const result = await createConnectHandler(unset)(
      {
        requestContext: {
          routeKey: '$connect',
          eventType: 'CONNECT',
          connectionId: 'iam-unset=',
          connectedAt: T0,
          requestTimeEpoch: T0,
          requestId: 'r-unset',
          domainName: 'api1.execute-api.us-east-1.amazonaws.com',
          stage: 'v1',
          apiId: 'api1',
          identity: { sourceIp: '10.0.0.9', userArn: SESSION },
        },
        headers: {},
        queryStringParameters: { group: 'batch', namespace: 'shop', ip: '10.0.0.9' },
        multiValueQueryStringParameters: {
          group: ['batch'],
          namespace: ['shop'],
          ip: ['10.0.0.9'],
        },
      },
      lambdaContext('connect'),
    );
    expect(result.statusCode).toBe(403);
    expect(result.body).toContain('requires the EC2 instance identity document');
    expect(
      await deps.store.getEntry({ namespace: 'shop', name: 'batch-10.0.0.9' }),
    ).toBeUndefined();
  });

  it('refuses a connect that API Gateway passed without a caller, with 401', async () => {
    expect((await iamConnect('batch', '10.0.0.6', null)).statusCode).toBe(401);
  });

  it('lists the rules for the operator', async () => {
    await registrar([
      'policy',
      'allow',
      '--role-arn',
      ROLE,
      '-n',
      'shop',
      '--service-account',
      'web-sa',
    ]);
    // `policy list` lists one namespace (-n, default "default") or every one (-A), as kubectl.
    const { code, stdout } = await registrar(['policy', 'list', '-A']);
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`${ROLE}\\s+shop\\s+web-sa`));
  });

  it('reports revoking a rule that does not exist as a failure', async () => {
    const { code, stderr } = await registrar([
      'policy',
      'revoke',
      '--role-arn',
      ROLE,
      '-n',
      'shop',
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain('no policy for role');
  });

  it('refuses a malformed role ARN as a usage error', async () => {
    const { code } = await registrar(['policy', 'allow', '--role-arn', 'web-vm', '-n', 'shop']);
    expect(code).toBe(2);
  });
});
