import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { systemClock } from '../../agent/clock.ts';
import { buildConnectUrl } from '../../agent/connect-url.ts';
import { openLink, RefusedError } from '../../agent/connection.ts';
import { presignConnectUrl } from '../../agent/sigv4.ts';
import type { IamCallerCredentials } from '../../infra/local/sigv4-verifier.ts';
import { evidenceHeaders } from '../../lib/protocol/identity-evidence.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { RegistryTable } from '../../lib/store/dynamodb-table.ts';
import {
  DynamoDbTerminatedInstances,
  TERMINATED_RECORD_TTL_MS,
  terminatedKey,
} from '../../lib/store/dynamodb-terminated-instances.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  entryName,
  NAMESPACE,
  startAgentTestbed,
} from '../fixtures/agent-testbed.ts';
import { createTestSigner, identityDocument } from '../fixtures/instance-identity-signer.ts';

/**
 * The attacker copied a terminated instance's role credentials and its genuine instance
 * identity document (a disk snapshot, a process that read IMDS). EC2 reports the instance
 * terminated; from then on a connect signed with those credentials and carrying that document
 * is refused 403 naming the instance, on the local runtime in IAM mode with attestation
 * required (documents signed by a test key standing in for EC2's). Another instance is not
 * affected.
 */
const ROLE = 'arn:aws:iam::000000000000:role/web-vm';
const GONE = 'i-0cccccccccccccccc';
const ALIVE = 'i-0dddddddddddddddd';
const caller = (instanceId: string, key: string): IamCallerCredentials => ({
  accessKeyId: key,
  secretAccessKey: `${key}-secret`,
  arn: `arn:aws:sts::000000000000:assumed-role/web-vm/${instanceId}`,
});
const VM_GONE = caller(GONE, 'AKIDGONEVM');
const VM_ALIVE = caller(ALIVE, 'AKIDALIVEVM');

const signer = createTestSigner();
let dir: string;
let bed: AgentTestbed;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registrar-terminated-'));
  const certs = join(dir, 'certs.pem');
  await writeFile(certs, signer.certificatePem);
  bed = await startAgentTestbed({
    authMode: 'iam',
    iamCallers: [VM_GONE, VM_ALIVE],
    instanceIdentityCerts: certs,
  });
  await bed.applyGroup('web');
  expect((await bed.cli(['policy', 'allow', '--role-arn', ROLE, '-n', NAMESPACE])).code).toBe(0);
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await bed?.close();
  await rm(dir, { recursive: true, force: true });
});

const documentOf = (instanceId: string, privateIp: string) =>
  identityDocument({ instanceId, privateIp, availabilityZone: 'us-east-1a' });

async function connectOnce(
  as: IamCallerCredentials,
  instanceId: string,
  ip: string,
): Promise<RefusedError | 'open'> {
  const url = buildConnectUrl(bed.runtime.url, {
    group: 'web',
    namespace: NAMESPACE,
    ips: [ip],
    labels: {},
  });
  const signed = await presignConnectUrl(url, { region: 'us-east-1', credentials: as });
  const document = documentOf(instanceId, ip);
  try {
    const link = await openLink(
      signed,
      evidenceHeaders(Buffer.from(document), signer.sign(document)),
      { clock: systemClock, connectTimeoutMs: 5_000, replyTimeoutMs: 2_000 },
    );
    await link.close('done');
    return 'open';
  } catch (error) {
    if (error instanceof RefusedError) return error;
    throw error;
  }
}

describe('an instance EC2 reported terminated', () => {
  it('registers until EC2 reports it terminated; then its entries go and its credentials and document are refused 403', async () => {
    expect(await connectOnce(VM_GONE, GONE, '10.0.7.1')).toBe('open');
    expect(await bed.entry(entryName('web', '10.0.7.1'))).toBeDefined();

    const event = await bed.cli(['ec2-event', '--instance-id', GONE, '--state', 'terminated']);
    expect(event.code).toBe(0);
    expect(event.stdout).toContain(`workloadentry "${NAMESPACE}/web-10.0.7.1" removed`);

    const replay = await connectOnce(VM_GONE, GONE, '10.0.7.1');
    expect(replay).toBeInstanceOf(RefusedError);
    expect((replay as RefusedError).status).toBe(403);
    expect((replay as RefusedError).message).toContain(
      `instance ${GONE} was reported terminated by EC2 at`,
    );
    expect(await bed.entry(entryName('web', '10.0.7.1'))).toBeUndefined();
  });

  it('leaves other instances alone', async () => {
    expect(await connectOnce(VM_ALIVE, ALIVE, '10.0.7.2')).toBe('open');
  });

  it('refuses the real agent signing as it, which logs the instance', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', VM_GONE.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', VM_GONE.secretAccessKey);
    vi.stubEnv('AWS_SESSION_TOKEN', undefined);
    vi.stubEnv('AWS_PROFILE', undefined);
    vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true');
    const document = documentOf(GONE, '10.0.7.1');
    const identityDocumentFile = join(dir, 'gone.json');
    const identitySignature = join(dir, 'gone.sig');
    await writeFile(identityDocumentFile, document);
    await writeFile(identitySignature, `${signer.sign(document)}\n`);
    const agent = await bed.agent({
      auth: {
        mode: 'iam',
        region: 'us-east-1',
        identityDocument: identityDocumentFile,
        identitySignature,
      },
      ips: ['10.0.7.1'],
      timingOverrides: { refusalBackoffMs: 5_000 },
    });
    await waitFor(() => agent.events.some((e) => e.type === 'retry-scheduled'), 'the refusal');
    await agent.stop();
    expect(agent.logs.join('\n')).toContain(
      `refused (403 Forbidden): instance ${GONE} was reported terminated by EC2`,
    );
  });

  it('keeps the record a day (the table TTL removes it), and the first time on a repeat', async () => {
    const client = createDocumentClient({
      region: bed.runtime.region,
      endpoint: bed.runtime.dynamoDbEndpoint,
    });
    try {
      const table = new RegistryTable(client, bed.runtime.tableName);
      const store = new DynamoDbTerminatedInstances(table);
      await store.recordTerminated('i-0eeeeeeeeeeeeeeee', 1_000_000);
      await store.recordTerminated('i-0eeeeeeeeeeeeeeee', 2_000_000);
      expect(await store.terminatedAt('i-0eeeeeeeeeeeeeeee')).toBe(1_000_000);
      const item = await table.get(terminatedKey('i-0eeeeeeeeeeeeeeee'));
      expect(item?.expiresAt).toBe(Math.ceil((2_000_000 + TERMINATED_RECORD_TTL_MS) / 1000));
      expect(await store.terminatedAt('i-0ffffffffffffffff')).toBeUndefined();
    } finally {
      client.destroy();
    }
  });

  it('is not recorded for a stopped instance, which may start again', async () => {
    const stopped = 'i-0abababababababab';
    const event = await bed.cli(['ec2-event', '--instance-id', stopped, '--state', 'stopped']);
    expect(event.code).toBe(0);
    const client = createDocumentClient({
      region: bed.runtime.region,
      endpoint: bed.runtime.dynamoDbEndpoint,
    });
    try {
      const store = new DynamoDbTerminatedInstances(
        new RegistryTable(client, bed.runtime.tableName),
      );
      expect(await store.terminatedAt(stopped)).toBeUndefined();
    } finally {
      client.destroy();
    }
  });
});
