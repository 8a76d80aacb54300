import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthSetupError } from '../../agent/auth.ts';
import { AgentConfigError, loadAgentConfig } from '../../agent/config.ts';
import { loadIdentityEvidence } from '../../agent/identity-evidence.ts';
import { memoryLogger } from '../../agent/logger.ts';
import {
  parseCertificates,
  verifyInstanceIdentityDocument,
} from '../../lib/auth/instance-identity-document.ts';
import { readIdentityEvidence } from '../../lib/protocol/identity-evidence.ts';
import { type ImdsStandIn, startImdsStandIn } from '../fixtures/agent-imds-stand-in.ts';
import { createTestSigner, identityDocument } from '../fixtures/instance-identity-signer.ts';

/**
 * The agent's half of attestation: where the document and signature come from (IMDSv2, or
 * the files of --identity-document/--identity-signature) and that what it sends verifies on
 * the registrar's side byte for byte. IMDS is a local stand-in: these tests do not run on EC2.
 */

const signer = createTestSigner();
const trusted = parseCertificates(signer.certificatePem);
const DOCUMENT = identityDocument({ instanceId: 'i-0abc123def4567890', privateIp: '10.0.1.17' });
const iam = { mode: 'iam' as const, region: 'us-east-1' };

let imds: ImdsStandIn;
let dir: string;
beforeAll(async () => {
  imds = await startImdsStandIn({
    '/latest/dynamic/instance-identity/document': DOCUMENT,
    '/latest/dynamic/instance-identity/signature': signer.sign(DOCUMENT),
  });
  dir = await mkdtemp(join(tmpdir(), 'agent-evidence-'));
});
afterAll(async () => {
  await imds.close();
  await rm(dir, { recursive: true, force: true });
});

/** What the registrar reads back from the headers, verified. */
function verified(headers: Record<string, string>) {
  const evidence = readIdentityEvidence(headers);
  if (!evidence) throw new Error('no evidence in the headers');
  return verifyInstanceIdentityDocument(evidence.document, evidence.signature, trusted);
}

describe('the agent reads the instance identity document', () => {
  it('from IMDSv2, with a session token, as headers the registrar verifies', async () => {
    const loaded = await loadIdentityEvidence(
      { auth: iam, imds: { enabled: true, url: imds.url, timeoutMs: 1_000 } },
      memoryLogger('text'),
    );

    expect(loaded.source).toBe('IMDS');
    expect(verified(loaded.headers).instanceId).toBe('i-0abc123def4567890');
    expect(imds.tokenRequests).toBeGreaterThan(0);
  });

  it('from the files of --identity-document and --identity-signature', async () => {
    const identityDocument = join(dir, 'document.json');
    const identitySignature = join(dir, 'signature');
    await writeFile(identityDocument, DOCUMENT);
    await writeFile(identitySignature, `${signer.sign(DOCUMENT)}\n`);

    const loaded = await loadIdentityEvidence(
      {
        auth: { ...iam, identityDocument, identitySignature },
        imds: { enabled: false, url: imds.url, timeoutMs: 1_000 },
      },
      memoryLogger('text'),
    );

    expect(loaded.source).toBe('files');
    expect(verified(loaded.headers).privateIp).toBe('10.0.1.17');
  });

  it('connects without one when IMDS does not answer, and says so', async () => {
    const logger = memoryLogger('text');

    const loaded = await loadIdentityEvidence(
      { auth: iam, imds: { enabled: true, url: 'http://127.0.0.1:1', timeoutMs: 200 } },
      logger,
    );

    expect(loaded).toEqual({ headers: {}, source: 'none' });
    expect(logger.lines.join('\n')).toContain(
      'cannot read the instance identity document from IMDS; connecting without it',
    );
  });

  it('sends none in token mode', async () => {
    const loaded = await loadIdentityEvidence(
      {
        auth: { mode: 'token', token: 't' },
        imds: { enabled: true, url: imds.url, timeoutMs: 1_000 },
      },
      memoryLogger('text'),
    );

    expect(loaded.headers).toEqual({});
  });

  it('stops at start on a signature file that is not base64', async () => {
    const identityDocument = join(dir, 'doc2.json');
    const identitySignature = join(dir, 'sig2');
    await writeFile(identityDocument, DOCUMENT);
    await writeFile(identitySignature, '{"not": "base64"}');

    await expect(
      loadIdentityEvidence(
        {
          auth: { ...iam, identityDocument, identitySignature },
          imds: { enabled: false, url: imds.url, timeoutMs: 1_000 },
        },
        memoryLogger('text'),
      ),
    ).rejects.toThrow(AuthSetupError);
  });
});

describe('--identity-document and --identity-signature', () => {
  const base = ['--url', 'ws://127.0.0.1:8080', '--group', 'web', '--namespace', 'shop'];

  it('are read into the IAM settings, also from their variables', () => {
    const config = loadAgentConfig([...base, '--auth', 'iam', '--identity-document', 'd.json'], {
      REGISTRAR_AGENT_IDENTITY_SIGNATURE: 's.b64',
    });

    expect(config).toMatchObject({
      auth: { mode: 'iam', identityDocument: 'd.json', identitySignature: 's.b64' },
    });
  });

  it('are refused one without the other', () => {
    expect(() =>
      loadAgentConfig([...base, '--auth', 'iam', '--identity-document', 'd.json'], {}),
    ).toThrow(
      new AgentConfigError(
        '--identity-document needs --identity-signature too: the registrar checks the document against its signature',
      ),
    );
  });

  it('are refused in token mode', () => {
    expect(() =>
      loadAgentConfig([...base, '--identity-document', 'd.json', '--identity-signature', 's'], {
        REGISTRAR_AGENT_TOKEN: 't',
      }),
    ).toThrow(/used only with --auth iam/);
  });
});
