import { readFile } from 'node:fs/promises';
import { evidenceHeaders } from '../lib/protocol/identity-evidence.ts';
import { AuthSetupError } from './auth.ts';
import type { AgentConfig } from './config.ts';
import { fetchIdentityDocument, type ImdsOptions, type SignedIdentityDocument } from './imds.ts';
import type { Logger } from './logger.ts';

/**
 * IAM mode: the EC2 instance identity document and its signature, which a registrar that
 * attests placement checks against AWS's certificates (lib/auth/instance-attestation.ts). Read
 * once, at start: EC2 issues one document per instance and it stays the same while the
 * instance runs. From the files of --identity-document/--identity-signature when given (both),
 * else from IMDSv2. Without either the agent connects without a document: a registrar that
 * only optionally attests accepts it, one that requires attestation refuses it with a reason
 * the agent logs.
 */
export interface LoadedEvidence {
  headers: Record<string, string>;
  /** For the start line: where the document came from. */
  source: 'files' | 'IMDS' | 'none';
}

export async function loadIdentityEvidence(
  config: Pick<AgentConfig, 'auth' | 'imds'>,
  logger: Logger,
  fetchDocument: (options: ImdsOptions) => Promise<SignedIdentityDocument> = fetchIdentityDocument,
): Promise<LoadedEvidence> {
  const { auth, imds } = config;
  if (auth.mode !== 'iam') return { headers: {}, source: 'none' };
  if (auth.identityDocument !== undefined && auth.identitySignature !== undefined) {
    const document = await readEvidenceFile(auth.identityDocument, '--identity-document');
    const signature = (
      await readEvidenceFile(auth.identitySignature, '--identity-signature')
    ).toString('utf8');
    if (!/^[A-Za-z0-9+/_=\s-]+$/.test(signature)) {
      throw new AuthSetupError(
        `--identity-signature ${auth.identitySignature} is not base64: save /latest/dynamic/instance-identity/signature as IMDS serves it`,
      );
    }
    return { headers: evidenceHeaders(document, signature), source: 'files' };
  }
  // Off by choice (--no-imds): the start line says identityDocument=none, and a registrar
  // that requires attestation says why it refuses.
  if (!imds.enabled) return { headers: {}, source: 'none' };
  try {
    const signed = await fetchDocument({ baseUrl: imds.url, timeoutMs: imds.timeoutMs });
    return { headers: evidenceHeaders(signed.document, signed.signature), source: 'IMDS' };
  } catch (error) {
    logger.warn(
      'cannot read the instance identity document from IMDS; connecting without it (a registrar that requires attestation will refuse)',
      { reason: (error as Error).message },
    );
    return { headers: {}, source: 'none' };
  }
}

/** The exact bytes: the signature covers the document byte for byte, newlines included. */
async function readEvidenceFile(path: string, flag: string): Promise<Buffer> {
  try {
    const bytes = await readFile(path);
    if (bytes.length === 0) throw new AuthSetupError(`${flag} ${path} is empty`);
    return bytes;
  } catch (error) {
    if (error instanceof AuthSetupError) throw error;
    throw new AuthSetupError(`cannot read ${flag} ${path}: ${(error as Error).message}`);
  }
}
