import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { iamAuthenticator } from '../../agent/auth.ts';
import type { IamCallerCredentials } from '../../infra/local/sigv4-verifier.ts';
import { isConnected } from '../../lib/domain/entry-record.ts';
import type { ObjectRef } from '../../lib/domain/model.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  entryName,
  NAMESPACE,
  startAgentTestbed,
  type TestAgent,
} from '../fixtures/agent-testbed.ts';

/**
 * `registrar policy revoke` cuts the sessions of the role in the namespace, through real
 * agents signing with their own (local) role session credentials on the local runtime in IAM
 * mode. Another role, and the same role in another namespace, are untouched; the revoked
 * sessions' reconnects are refused 403.
 */
const OTHER_NAMESPACE = 'books';
const WEB_ROLE = 'arn:aws:iam::000000000000:role/web-vm';
const API_ROLE = 'arn:aws:iam::000000000000:role/api-vm';
const session = (role: string, instance: string, key: string): IamCallerCredentials => ({
  accessKeyId: key,
  secretAccessKey: `${key}-secret`,
  arn: `arn:aws:sts::000000000000:assumed-role/${role}/${instance}`,
});
const WEB_1 = session('web-vm', 'i-0000000000000a001', 'AKIDWEB1');
const WEB_2 = session('web-vm', 'i-0000000000000a002', 'AKIDWEB2');
const WEB_BOOKS = session('web-vm', 'i-0000000000000a003', 'AKIDWEB3');
const API_1 = session('api-vm', 'i-0000000000000b001', 'AKIDAPI1');

let bed: AgentTestbed;

beforeAll(async () => {
  bed = await startAgentTestbed({
    authMode: 'iam',
    iamCallers: [WEB_1, WEB_2, WEB_BOOKS, API_1],
    // The agents here have no instance identity document: the operator made it optional.
    instanceAttestation: 'optional',
  });
  await bed.applyGroup('web');
  await bed.registry.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: OTHER_NAMESPACE },
    spec: { template: { ports: { http: 8080 } } },
  });
  for (const [role, namespace] of [
    [WEB_ROLE, NAMESPACE],
    [WEB_ROLE, OTHER_NAMESPACE],
    [API_ROLE, NAMESPACE],
  ] as const) {
    expect((await bed.cli(['policy', 'allow', '--role-arn', role, '-n', namespace])).code).toBe(0);
  }
});
afterAll(() => bed?.close());

async function iamAgent(caller: IamCallerCredentials, ip: string, namespace = NAMESPACE) {
  const credentials = async () => ({
    accessKeyId: caller.accessKeyId,
    secretAccessKey: caller.secretAccessKey,
  });
  const agent = await bed.agent({
    auth: { mode: 'iam', region: 'us-east-1' },
    authenticator: iamAuthenticator('us-east-1', credentials),
    ips: [ip],
    namespace,
  });
  await waitFor(() => agent.events.some((e) => e.type === 'registered'), `${ip} registered`);
  return agent;
}

const connected = async (ref: ObjectRef) => {
  const record = await bed.registry.getEntry(ref);
  return record !== undefined && isConnected(record);
};
const ref = (ip: string, namespace = NAMESPACE): ObjectRef => ({
  namespace,
  name: entryName('web', ip),
});
const closes = (agent: TestAgent) => agent.events.filter((e) => e.type === 'closed').length;

describe('registrar policy revoke', () => {
  it("closes the role's sessions in the namespace; their reconnects are refused 403; other roles and namespaces stay", async () => {
    const revoked = [await iamAgent(WEB_1, '10.0.20.1'), await iamAgent(WEB_2, '10.0.20.2')];
    const sameRoleElsewhere = await iamAgent(WEB_BOOKS, '10.0.20.3', OTHER_NAMESPACE);
    const otherRole = await iamAgent(API_1, '10.0.20.4');

    const revoke = await bed.cli([
      'policy',
      'revoke',
      '--role-arn',
      WEB_ROLE,
      '-n',
      NAMESPACE,
      '--management-endpoint',
      bed.runtime.managementUrl,
      '--settle',
      '0',
    ]);

    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toBe(
      `role ${WEB_ROLE} may no longer register in namespace "${NAMESPACE}"\n` +
        `closed 2 connections role ${WEB_ROLE} in namespace "${NAMESPACE}" authenticated (2 entries): their entries leave once disconnected; reconnects are refused\n`,
    );
    await waitFor(
      async () => !(await connected(ref('10.0.20.1'))) && !(await connected(ref('10.0.20.2'))),
      'the revoked sessions’ entries disconnected',
      30_000,
    );
    for (const agent of revoked) {
      await waitFor(
        () => agent.logs.some((line) => (JSON.parse(line) as { status?: number }).status === 403),
        'the reconnect refused 403',
      );
    }
    expect(closes(sameRoleElsewhere)).toBe(0);
    expect(closes(otherRole)).toBe(0);
    expect(await connected(ref('10.0.20.3', OTHER_NAMESPACE))).toBe(true);
    expect(await connected(ref('10.0.20.4'))).toBe(true);
    for (const agent of [...revoked, sameRoleElsewhere, otherRole]) await agent.stop();
  });
});
