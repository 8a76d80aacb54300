import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, Provider } from '@smithy/types';
import { NodeSha256 } from '../aws/node-sha256.ts';

export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
/** The header that binds a token to one cluster; it must be signed, not hoisted to the query. */
export const CLUSTER_ID_HEADER = 'x-k8s-aws-id';
/** What `aws eks get-token` and aws-iam-authenticator use; EKS accepts the token for 15 min. */
const PRESIGN_SECONDS = 60;

export interface EksTokenInput {
  clusterName: string;
  region: string;
  credentials: AwsCredentialIdentity | Provider<AwsCredentialIdentity>;
  /** Signing time; defaults to now. Fixed in tests. */
  signingDate?: Date;
}

/**
 * The bearer token EKS accepts from IAM principals, made without kubectl or the AWS CLI:
 * `k8s-aws-v1.` + base64url (no padding) of a presigned STS GetCallerIdentity URL whose
 * signature covers the `x-k8s-aws-id: <cluster name>` header. EKS replays the URL to STS to
 * learn the caller, and the signed header stops a token for one cluster being used on another.
 */
export async function createEksToken(input: EksTokenInput): Promise<string> {
  const hostname = `sts.${input.region}.amazonaws.com`;
  const signer = new SignatureV4({
    service: 'sts',
    region: input.region,
    credentials: input.credentials,
    sha256: NodeSha256,
  });
  const request = new HttpRequest({
    method: 'GET',
    protocol: 'https:',
    hostname,
    path: '/',
    query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
    headers: { host: hostname, [CLUSTER_ID_HEADER]: input.clusterName },
  });
  const signed = await signer.presign(request, {
    expiresIn: PRESIGN_SECONDS,
    ...(input.signingDate ? { signingDate: input.signingDate } : {}),
  });
  const url = `https://${hostname}/?${queryString(signed.query ?? {})}`;
  return `${EKS_TOKEN_PREFIX}${Buffer.from(url, 'utf8').toString('base64url')}`;
}

/** Decodes a token back to its URL (for tests and for debugging a 401). */
export function decodeEksToken(token: string): URL {
  if (!token.startsWith(EKS_TOKEN_PREFIX))
    throw new Error(`not an EKS token: expected the prefix '${EKS_TOKEN_PREFIX}'`);
  return new URL(Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString('utf8'));
}

function queryString(query: NonNullable<HttpRequest['query']>): string {
  return Object.keys(query)
    .sort()
    .flatMap((key) => {
      const value = query[key];
      const values = Array.isArray(value) ? value : [value ?? ''];
      return values.map((v) => `${strictEncode(key)}=${strictEncode(v ?? '')}`);
    })
    .join('&');
}

/** RFC 3986 encoding, as SigV4 canonicalises the query (encodeURIComponent leaves !'()* alone). */
function strictEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
