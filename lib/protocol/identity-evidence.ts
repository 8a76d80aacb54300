import { InvalidRequestError } from '../domain/errors.ts';
import type { Headers } from './websocket-events.ts';

/**
 * How an IAM-mode agent hands the registrar its instance identity document and signature on
 * `$connect`: two headers, each base64url (RFC 4648 §5, no padding needed) of the exact bytes.
 *
 * Headers, not query parameters: API Gateway limits a WebSocket URL to 4,096 characters and the
 * presigned URL already carries the SigV4 parameters, of which an instance profile's session
 * token alone is 1 to 2 KB once percent-encoded, plus the group, addresses and up to 64 labels.
 * The document (about 500 bytes of JSON, about 700 in base64url) and the signature (about 350)
 * would push a labelled connect over that limit. Headers are not part of the presigned
 * signature (only `host` is), and need not be: the document carries AWS's own signature, and
 * it is bound to the SigV4 caller by its instanceId. base64url because the document's JSON has
 * line breaks, which a header value cannot hold, and IMDS's base64 signature is line-wrapped.
 */
export const IDENTITY_DOCUMENT_HEADER = 'X-Registrar-Identity-Document';
export const IDENTITY_SIGNATURE_HEADER = 'X-Registrar-Identity-Signature';

// EC2's document is about 500 bytes and its RSA signature 128 (1024-bit) or 256 bytes; the
// bounds leave room and keep a request from making $connect parse megabytes.
export const MAX_DOCUMENT_BYTES = 4096;
export const MAX_SIGNATURE_BYTES = 1024;

export interface IdentityEvidence {
  /** The document's exact bytes, as IMDS served them: the signature covers them. */
  document: Buffer;
  signature: Buffer;
}

/** The two headers for a connect; `signature` as IMDS serves it (base64, possibly wrapped). */
export function evidenceHeaders(document: Buffer, signature: string): Record<string, string> {
  const decoded = Buffer.from(signature.replace(/\s+/g, ''), 'base64');
  return {
    [IDENTITY_DOCUMENT_HEADER]: document.toString('base64url'),
    [IDENTITY_SIGNATURE_HEADER]: decoded.toString('base64url'),
  };
}

/**
 * The evidence a `$connect` carries, or undefined when it carries none. One header without the
 * other, or a value that is not base64url or too large, is a 400 naming the header.
 */
export function readIdentityEvidence(
  headers: Headers | null | undefined,
): IdentityEvidence | undefined {
  const document = header(headers, IDENTITY_DOCUMENT_HEADER);
  const signature = header(headers, IDENTITY_SIGNATURE_HEADER);
  if (document === undefined && signature === undefined) return undefined;
  if (document === undefined || signature === undefined) {
    const [given, missing] =
      document === undefined
        ? [IDENTITY_SIGNATURE_HEADER, IDENTITY_DOCUMENT_HEADER]
        : [IDENTITY_DOCUMENT_HEADER, IDENTITY_SIGNATURE_HEADER];
    throw new InvalidRequestError(
      `header ${given} given without ${missing}; send both (the document and its signature) or neither`,
      missing,
    );
  }
  return {
    document: decoded(document, IDENTITY_DOCUMENT_HEADER, MAX_DOCUMENT_BYTES),
    signature: decoded(signature, IDENTITY_SIGNATURE_HEADER, MAX_SIGNATURE_BYTES),
  };
}

/** API Gateway keeps the client's spelling of header names; HTTP says case does not matter. */
function header(headers: Headers | null | undefined, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined && value.trim() !== '') {
      return value.trim();
    }
  }
  return undefined;
}

function decoded(value: string, name: string, maxBytes: number): Buffer {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(value)) {
    throw new InvalidRequestError(
      `header ${name} is not base64url (letters, digits, - and _): encode the exact bytes IMDS serves`,
      name,
    );
  }
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length > maxBytes) {
    throw new InvalidRequestError(
      `header ${name} holds ${bytes.length} bytes; at most ${maxBytes} (EC2's is far smaller)`,
      name,
    );
  }
  return bytes;
}
