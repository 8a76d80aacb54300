import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { systemClock } from '../../agent/clock.ts';
import { buildConnectUrl } from '../../agent/connect-url.ts';
import { openLink, RefusedError } from '../../agent/connection.ts';
import { presignConnectUrl } from '../../agent/sigv4.ts';
import { OptionsError, parseLocalOptions } from '../../infra/local/options.ts';
import type { IamCallerCredentials } from '../../infra/local/sigv4-verifier.ts';
import { evidenceHeaders } from '../../lib/protocol/identity-evidence.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  entryName,
  NAMESPACE,
  startAgentTestbed,
} from '../fixtures/agent-testbed.ts';
import {
  createTestSigner,
  type DocumentFields,
  identityDocument,
} from '../fixtures/instance-identity-signer.ts';

/**
 * Attested placement end to end on the local runtime started as `npm start -- --auth-mode iam
 * --iam-callers F --instance-identity-certs <pem>`: the real agent reads the instance identity
 * document and its signature from files (IMDS is not here), sends them with its SigV4-presigned
 * upgrade, and $connect registers the address and zone the document states, or refuses with
 * both values. EC2's signing key is replaced by a test key whose certificate is the PEM file.
 */

const ROLE = 'arn:aws:iam::000000000000:role/web-vm';
const INSTANCE_A = 'i-0aaaaaaaaaaaaaaaa';
const INSTANCE_B = 'i-0bbbbbbbbbbbbbbbb';
const VM_A: IamCallerCredentials = {
  accessKeyId: 'AKIDATTESTEDVMA',
  secretAccessKey: 'vm-a-secret',
  arn: `arn:aws:sts::000000000000:assumed-role/web-vm/${INSTANCE_A}`,
};
const VM_B: IamCallerCredentials = {
  accessKeyId: 'AKIDATTESTEDVMB',
  secretAccessKey: 'vm-b-secret',
  arn: `arn:aws:sts::000000000000:assumed-role/web-vm/${INSTANCE_B}`,
};
const ZONE = 'us-east-1c';

const signer = createTestSigner();
let dir: string;
let bed: AgentTestbed;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registrar-attestation-'));
  const certs = join(dir, 'certs.pem');
  await writeFile(certs, signer.certificatePem);
  const parsed = parseLocalOptions(
    [
      '--auth-mode',
      'iam',
      '--iam-callers',
      await callersFile(),
      '--instance-identity-certs',
      certs,
    ],
    {},
  );
  if (parsed.kind !== 'run') throw new Error('expected runtime options');
  bed = await startAgentTestbed(parsed.options);
  await bed.applyGroup('web');
  expect((await bed.cli(['policy', 'allow', '--role-arn', ROLE, '-n', NAMESPACE])).code).toBe(0);
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await bed?.close();
  await rm(dir, { recursive: true, force: true });
});

async function callersFile(): Promise<string> {
  const file = join(dir, 'callers.json');
  await writeFile(file, JSON.stringify([VM_A, VM_B]));
  return file;
}

/** A document as EC2 would issue it for the instance, in zone us-east-1c. */
function documentOf(instanceId: string, privateIp: string, extra: Partial<DocumentFields> = {}) {
  return identityDocument({ instanceId, privateIp, availabilityZone: ZONE, ...extra });
}

/** The document and signature files an operator saves from IMDS, for the agent's flags. */
async function evidenceFiles(name: string, document: string, signature = signer.sign(document)) {
  const identityDocument = join(dir, `${name}.json`);
  const identitySignature = join(dir, `${name}.sig`);
  await writeFile(identityDocument, document);
  await writeFile(identitySignature, `${signature}\n`);
  return { identityDocument, identitySignature };
}

/** One upgrade with the agent's signer and connection code, as `caller`, with these headers. */
async function connectOnce(
  caller: IamCallerCredentials,
  ip: string,
  headers: Record<string, string>,
  locality?: string,
): Promise<RefusedError | 'open'> {
  const url = buildConnectUrl(bed.runtime.url, {
    group: 'web',
    namespace: NAMESPACE,
    ips: [ip],
    labels: {},
    ...(locality ? { locality } : {}),
  });
  const signed = await presignConnectUrl(url, { region: 'us-east-1', credentials: caller });
  try {
    const link = await openLink(signed, headers, {
      clock: systemClock,
      connectTimeoutMs: 5_000,
      replyTimeoutMs: 2_000,
    });
    await link.close('done');
    return 'open';
  } catch (error) {
    if (error instanceof RefusedError) return error;
    throw error;
  }
}

const signedHeaders = (document: string) =>
  evidenceHeaders(Buffer.from(document), signer.sign(document));

/** Runs a real agent that signs as VM A (credentials from the environment, as on a VM). */
function signAsVmA(): void {
  vi.stubEnv('AWS_ACCESS_KEY_ID', VM_A.accessKeyId);
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', VM_A.secretAccessKey);
  vi.stubEnv('AWS_SESSION_TOKEN', undefined);
  vi.stubEnv('AWS_PROFILE', undefined);
  vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true');
}

describe('npm start --auth-mode iam --instance-identity-certs', () => {
  it("registers an agent with its own document at the document's address and zone, as its instance", async () => {
    signAsVmA();
    const files = await evidenceFiles('a', documentOf(INSTANCE_A, '10.0.1.5'));
    const agent = await bed.agent({
      auth: { mode: 'iam', region: 'us-east-1', ...files },
      ips: ['10.0.1.5'],
    });

    await waitFor(() => agent.events.some((e) => e.type === 'registered'), 'registration');
    const name = entryName('web', '10.0.1.5');
    const entry = await bed.entry(name);
    expect(entry?.we.spec).toMatchObject({ address: '10.0.1.5', locality: `us-east-1/${ZONE}` });
    const record = await bed.registry.getEntry({ namespace: NAMESPACE, name });
    expect(record?.identity).toEqual({
      principal: VM_A.arn,
      namespace: NAMESPACE,
      instanceId: INSTANCE_A,
    });
    expect(record?.instanceId).toBe(INSTANCE_A);
    await agent.stop();
  });

  it("refuses an agent whose address is not the document's, and the agent logs both values", async () => {
    signAsVmA();
    const files = await evidenceFiles('a-elsewhere', documentOf(INSTANCE_A, '10.0.1.5'));
    const agent = await bed.agent({
      auth: { mode: 'iam', region: 'us-east-1', ...files },
      ips: ['10.0.1.9'],
      timingOverrides: { refusalBackoffMs: 5_000 },
    });

    const refusal = await waitFor(
      () => agent.events.find((e) => e.type === 'retry-scheduled'),
      'the refusal',
    );
    expect(refusal).toMatchObject({ refused: true });
    expect(agent.logs.join('\n')).toContain(
      "refused (403 Forbidden): address 10.0.1.9 disagrees with the instance identity document's privateIp 10.0.1.5",
    );
    expect(await bed.entry(entryName('web', '10.0.1.9'))).toBeUndefined();
    await agent.stop();
  });

  it("refuses another instance's genuine document, naming both instances", async () => {
    const outcome = await connectOnce(
      VM_A,
      '10.0.1.6',
      signedHeaders(documentOf(INSTANCE_B, '10.0.1.6')),
    );

    expect(outcome).toMatchObject({ status: 403 });
    expect((outcome as RefusedError).message).toContain(
      `instanceId ${INSTANCE_B} disagrees with the caller's role session name ${INSTANCE_A}`,
    );
    expect(await bed.entry(entryName('web', '10.0.1.6'))).toBeUndefined();
  });

  it('refuses a document changed after it was signed', async () => {
    const genuine = documentOf(INSTANCE_A, '10.0.1.5');
    const tampered = genuine.replace('10.0.1.5', '10.0.1.7');
    const headers = evidenceHeaders(Buffer.from(tampered), signer.sign(genuine));

    const outcome = await connectOnce(VM_A, '10.0.1.7', headers);

    expect(outcome).toMatchObject({ status: 403 });
    expect((outcome as RefusedError).message).toMatch(/signature does not verify/);
    expect(await bed.entry(entryName('web', '10.0.1.7'))).toBeUndefined();
  });

  it('refuses a document signed by a key outside the trusted PEM file', async () => {
    const document = documentOf(INSTANCE_A, '10.0.1.8');
    const forged = createTestSigner('forger').sign(document);

    const outcome = await connectOnce(
      VM_A,
      '10.0.1.8',
      evidenceHeaders(Buffer.from(document), forged),
    );

    expect(outcome).toMatchObject({ status: 403 });
    expect(await bed.entry(entryName('web', '10.0.1.8'))).toBeUndefined();
  });

  it('refuses a connect without a document: attestation is required', async () => {
    const outcome = await connectOnce(VM_B, '10.0.1.10', {});

    expect(outcome).toMatchObject({ status: 403 });
    expect((outcome as RefusedError).message).toMatch(
      /requires the EC2 instance identity document in IAM mode and the connect carried none/,
    );
    expect(await bed.entry(entryName('web', '10.0.1.10'))).toBeUndefined();
  });

  it("refuses a locality in another zone than the document's, naming both", async () => {
    const outcome = await connectOnce(
      VM_B,
      '10.0.1.11',
      signedHeaders(documentOf(INSTANCE_B, '10.0.1.11')),
      'us-east-1/us-east-1a',
    );

    expect(outcome).toMatchObject({ status: 403 });
    expect((outcome as RefusedError).message).toContain(
      `locality us-east-1/us-east-1a disagrees with the instance identity document's region/availabilityZone us-east-1/${ZONE}`,
    );
    expect(await bed.entry(entryName('web', '10.0.1.11'))).toBeUndefined();
  });

  it('registers the other instance with its own document through a plain WebSocket client', async () => {
    expect(
      await connectOnce(VM_B, '10.0.1.12', signedHeaders(documentOf(INSTANCE_B, '10.0.1.12'))),
    ).toBe('open');
    expect((await bed.entry(entryName('web', '10.0.1.12')))?.we.spec.locality).toBe(
      `us-east-1/${ZONE}`,
    );
  });
});

describe('an attested address is unique within its network', () => {
  /** Opens a connection as `caller` to `group` and keeps it open; undefined when refused. */
  async function hold(caller: IamCallerCredentials, group: string, document: string) {
    const privateIp = (JSON.parse(document) as { privateIp: string }).privateIp;
    const url = buildConnectUrl(bed.runtime.url, {
      group,
      namespace: NAMESPACE,
      ips: [privateIp],
      labels: {},
    });
    const signed = await presignConnectUrl(url, { region: 'us-east-1', credentials: caller });
    return openLink(signed, signedHeaders(document), {
      clock: systemClock,
      connectTimeoutMs: 5_000,
      replyTimeoutMs: 2_000,
    });
  }

  it('lets the same instance move groups make before break: its new entry replaces the old one', async () => {
    await bed.applyGroup('api');
    const document = documentOf(INSTANCE_A, '10.0.1.30');
    const old = await hold(VM_A, 'web', document);
    expect(await bed.entry(entryName('web', '10.0.1.30'))).toMatchObject({ connected: true });

    // Still connected in `web`, the same instance (AWS's word) registers in `api`.
    const moved = await hold(VM_A, 'api', document);

    expect(await bed.entry(entryName('web', '10.0.1.30'))).toBeUndefined();
    expect(await bed.entry(entryName('api', '10.0.1.30'))).toMatchObject({ connected: true });
    await old.close('done');
    await moved.close('done');
  });

  it('gives an address to the instance AWS now signs it for, replacing the entry of the one that had it', async () => {
    // Instance A held 10.0.1.31 in `web` (its $disconnect lost: still connected); EC2 has
    // since given the address to instance B, which registers in `api`.
    await bed.applyGroup('api');
    const before = await hold(VM_A, 'web', documentOf(INSTANCE_A, '10.0.1.31'));

    const after = await hold(VM_B, 'api', documentOf(INSTANCE_B, '10.0.1.31'));

    expect(await bed.entry(entryName('web', '10.0.1.31'))).toBeUndefined();
    const record = await bed.registry.getEntry({
      namespace: NAMESPACE,
      name: entryName('api', '10.0.1.31'),
    });
    expect(record?.identity?.instanceId).toBe(INSTANCE_B);
    await before.close('done').catch(() => {});
    await after.close('done');
  });
});

describe('--instance-identity-certs options', () => {
  it('is refused without --auth-mode iam', async () => {
    const certs = join(dir, 'only.pem');
    await writeFile(certs, signer.certificatePem);

    expect(() => parseLocalOptions(['--instance-identity-certs', certs], {})).toThrow(
      /--instance-identity-certs is used only with --auth-mode iam/,
    );
  });

  it('refuses a file without a certificate, naming the flag and the path', async () => {
    const bad = join(dir, 'bad.pem');
    await writeFile(bad, 'nothing here\n');

    expect(() =>
      parseLocalOptions(
        [
          '--auth-mode',
          'iam',
          '--iam-callers',
          join(dir, 'callers.json'),
          '--instance-identity-certs',
          bad,
        ],
        {},
      ),
    ).toThrow(
      new OptionsError(
        `invalid --instance-identity-certs '${bad}': holds no PEM certificate (-----BEGIN CERTIFICATE----- ... -----END ...)`,
      ),
    );
  });
});
