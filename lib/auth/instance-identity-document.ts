import { verify, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ForbiddenError, InvalidRequestError } from '../domain/errors.ts';
import { certificatesOfRegions } from './aws-instance-identity-certs.ts';

/**
 * The EC2 instance identity document (`/latest/dynamic/instance-identity/document`) and its
 * base64-encoded signature (`.../signature`): EC2 signs the document's exact bytes with
 * RSA-SHA256 (PKCS #1 v1.5) under a key whose certificate AWS publishes per Region (EC2 User
 * Guide, "Verify the instance identity document", option 2). Pure: the trusted certificates
 * are an argument.
 */
export interface InstanceIdentityDocument {
  accountId: string;
  instanceId: string;
  privateIp: string;
  availabilityZone: string;
  region: string;
  /** When the instance last started (RFC 3339); shown, never checked: see docs/architecture.md. */
  pendingTime?: string;
}

const REQUIRED_FIELDS = [
  'accountId',
  'instanceId',
  'privateIp',
  'availabilityZone',
  'region',
] as const;

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * The certificates in PEM text, each checked: it parses and carries an RSA key (the
 * base64 signature is RSA; AWS's DSA and RSA-2048 certificates belong to the other two
 * signatures). Throws naming the certificate by position.
 */
export function parseCertificates(pem: string): X509Certificate[] {
  const blocks = pem.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) {
    throw new Error('holds no PEM certificate (-----BEGIN CERTIFICATE----- ... -----END ...)');
  }
  return blocks.map((block, index) => {
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(block);
    } catch (error) {
      throw new Error(`certificate ${index + 1} does not parse: ${(error as Error).message}`);
    }
    const type = certificate.publicKey.asymmetricKeyType;
    if (type !== 'rsa') {
      throw new Error(
        `certificate ${index + 1} (${certificate.subject.replaceAll('\n', ', ')}) has a ${type} key; use AWS's RSA certificate for the Region (the base64 signature is RSA-SHA256)`,
      );
    }
    return certificate;
  });
}

/**
 * The trusted set from configuration: unset, AWS's certificates of `regions` (each checked
 * against its pinned fingerprint, lib/auth/aws-instance-identity-certs.ts); PEM text itself;
 * or the path of a PEM file (the operator's own set, which replaces AWS's). Throws naming
 * `source` (the variable or flag) and the value's kind, or the Region.
 */
export function loadTrustedCertificates(
  value: string | undefined,
  source: string,
  regions: { names: readonly string[]; source: string } = { names: [], source: 'regions' },
): X509Certificate[] {
  if (value === undefined || value.trim() === '') {
    try {
      if (regions.names.length === 0)
        throw new Error("names no Region: AWS's certificates of none are trusted");
      return certificatesOfRegions(regions.names).flatMap((published) =>
        parseCertificates(published.pem),
      );
    } catch (error) {
      throw new Error(
        `${regions.source} '${regions.names.join(',')}': ${(error as Error).message}`,
      );
    }
  }
  if (value.includes('-----BEGIN')) {
    try {
      return parseCertificates(value);
    } catch (error) {
      throw new Error(`${source} (PEM text): ${(error as Error).message}`);
    }
  }
  let text: string;
  try {
    text = readFileSync(value, 'utf8');
  } catch (error) {
    throw new Error(`${source} '${value}': cannot read the PEM file: ${(error as Error).message}`);
  }
  try {
    return parseCertificates(text);
  } catch (error) {
    throw new Error(`${source} '${value}': ${(error as Error).message}`);
  }
}

/**
 * The document, once its signature verifies under one of the trusted certificates. A
 * signature that verifies under none is a 403 (a tampered document, one signed by someone
 * else, or a Region whose certificate is not trusted); a signed document that is not the
 * JSON EC2 writes is a 400.
 */
export function verifyInstanceIdentityDocument(
  document: Buffer,
  signature: Buffer,
  trusted: readonly X509Certificate[],
): InstanceIdentityDocument {
  const signedBy = trusted.find((certificate) => {
    try {
      return verify('sha256', document, certificate.publicKey, signature);
    } catch {
      // A signature of the wrong length for this key: not signed by it.
      return false;
    }
  });
  if (!signedBy) {
    const region = /"region"\s*:\s*"([a-z0-9-]{1,32})"/.exec(document.toString('utf8'))?.[1];
    throw new ForbiddenError(
      `the instance identity document's signature does not verify against any of the ${trusted.length} trusted AWS certificate(s)${region ? ` (the document claims region ${region})` : ''}: send the document and signature exactly as IMDS serves them; if they are genuine, trust that Region (the stack option instanceIdentityRegions, REGISTRAR_INSTANCE_IDENTITY_REGIONS; docs/deploy.md)`,
    );
  }
  return parseDocument(document);
}

function parseDocument(document: Buffer): InstanceIdentityDocument {
  let parsed: unknown;
  try {
    parsed = JSON.parse(document.toString('utf8'));
  } catch {
    throw new InvalidRequestError(
      'the instance identity document is signed but is not JSON',
      'identityDocument',
    );
  }
  const fields = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<
    string,
    unknown
  >;
  const missing = REQUIRED_FIELDS.filter(
    (field) => typeof fields[field] !== 'string' || fields[field] === '',
  );
  if (missing.length > 0) {
    throw new InvalidRequestError(
      `the instance identity document lacks ${missing.join(', ')}`,
      'identityDocument',
    );
  }
  const result: InstanceIdentityDocument = {
    accountId: fields.accountId as string,
    instanceId: fields.instanceId as string,
    privateIp: fields.privateIp as string,
    availabilityZone: fields.availabilityZone as string,
    region: fields.region as string,
  };
  if (typeof fields.pendingTime === 'string') result.pendingTime = fields.pendingTime;
  return result;
}
