import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { systemClock } from '../../agent/clock.ts';
import { buildConnectUrl } from '../../agent/connect-url.ts';
import { type AgentLink, openLink, RequestError } from '../../agent/connection.ts';
import { presignConnectUrl } from '../../agent/sigv4.ts';
import { parseLocalOptions } from '../../infra/local/options.ts';
import type { IamCallerCredentials } from '../../infra/local/sigv4-verifier.ts';
import { evidenceHeaders } from '../../lib/protocol/identity-evidence.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { createTestSigner, identityDocument } from '../fixtures/instance-identity-signer.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { jwtClaims } from '../fixtures/kube-identity-stand-in.ts';

/**
 * The sidecar bootstrap in IAM mode with attestation required, on the local runtime started
 * as `npm start -- --auth-mode iam --iam-callers F --instance-identity-certs <pem> --kubeconfig
 * K`: an attested instance's connection gets its entry's mesh identity; once the role's allow
 * rule is removed it gets none. EC2's signing key is a test key; the cluster is the
 * kube-apiserver STAND-IN (no API server runs here).
 */
const ROLE = 'arn:aws:iam::000000000000:role/web-vm';
const INSTANCE = 'i-0aaaaaaaaaaaaaaaa';
const VM: IamCallerCredentials = {
  accessKeyId: 'AKIDSIDECARVMA',
  secretAccessKey: 'vm-a-secret',
  arn: `arn:aws:sts::000000000000:assumed-role/web-vm/${INSTANCE}`,
};

const signer = createTestSigner();
let dir: string;
let api: KubeApiServerStandIn;
let bed: AgentTestbed;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sidecar-iam-'));
  api = await startKubeApiServerStandIn();
  api.addServiceAccount(NAMESPACE, 'web');
  api.putConfigMap(NAMESPACE, 'istio-ca-root-cert', { 'root-cert.pem': signer.certificatePem });
  await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
  await writeFile(join(dir, 'certs.pem'), signer.certificatePem);
  await writeFile(join(dir, 'callers.json'), JSON.stringify([VM]));
  const parsed = parseLocalOptions(
    [
      '--auth-mode',
      'iam',
      '--iam-callers',
      join(dir, 'callers.json'),
      '--instance-identity-certs',
      join(dir, 'certs.pem'),
      '--kubeconfig',
      join(dir, 'kubeconfig'),
      '--projection-interval',
      '1h',
    ],
    {},
  );
  if (parsed.kind !== 'run') throw new Error('expected runtime options');
  bed = await startAgentTestbed(parsed.options);
  await bed.registry.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: NAMESPACE },
    spec: { template: { ports: { http: 8080 }, serviceAccount: 'web' } },
  });
  const allowed = await bed.cli([
    'policy',
    'allow',
    '--role-arn',
    ROLE,
    '-n',
    NAMESPACE,
    '--service-account',
    'web',
  ]);
  expect(allowed.code).toBe(0);
});
afterAll(async () => {
  await bed?.close();
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The attested instance's connection, as the agent opens it (presigned, with its document). */
async function attestedLink(ip: string): Promise<AgentLink> {
  const document = identityDocument({ instanceId: INSTANCE, privateIp: ip });
  const url = buildConnectUrl(bed.runtime.url, {
    group: 'web',
    namespace: NAMESPACE,
    ips: [ip],
    labels: {},
  });
  const signed = await presignConnectUrl(url, { region: 'us-east-1', credentials: VM });
  return openLink(signed, evidenceHeaders(Buffer.from(document), signer.sign(document)), {
    clock: systemClock,
    connectTimeoutMs: 5_000,
    replyTimeoutMs: 5_000,
  });
}

describe('sidecar bootstrap in IAM mode with attestation required', () => {
  it('mints for the attested instance’s entry, and stops once the role’s allow rule is gone', async () => {
    const link = await attestedLink('10.0.1.5');
    try {
      const reply = await link.request('sidecar');
      expect(reply).toMatchObject({ ok: true, entry: 'shop/web-10.0.1.5', serviceAccount: 'web' });
      expect(jwtClaims((reply.token as { value: string }).value).sub).toBe(
        'system:serviceaccount:shop:web',
      );

      const removed = await bed.cli(['policy', 'revoke', '--role-arn', ROLE, '-n', NAMESPACE]);
      expect(removed.code).toBe(0);
      const refused = await link.request('sidecar').catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(RequestError);
      expect((refused as RequestError).code).toBe('Forbidden');
      expect((refused as RequestError).message).toContain('may no longer register');
      expect(api.issuedTokens()).toHaveLength(1);
    } finally {
      await link.close();
    }
  });
});
