import { imdsRequest } from './imds-request.ts';

/**
 * IMDSv2 client: a PUT for a session token, then GETs with that token. IMDSv1 is not used:
 * instances are increasingly launched with `HttpTokens: required`, and the token PUT is what
 * stops an SSRF on the VM from reading metadata. The base URL is injectable so tests can point
 * it at a local stand-in.
 */
export interface InstanceIdentity {
  instanceId: string;
  ipv4?: string;
  ipv6?: string;
  region: string;
  availabilityZone: string;
}

export interface ImdsOptions {
  baseUrl: string;
  /** Per request; off EC2 the link-local address does not answer, so keep this short. */
  timeoutMs: number;
}

/** IMDS did not answer the token request: almost always "not running on EC2". */
export class ImdsUnavailableError extends Error {}

// 6 h, the maximum; the agent asks IMDS only at start, so one token is enough.
const TOKEN_TTL_SECONDS = '21600';

export async function discoverInstance(options: ImdsOptions): Promise<InstanceIdentity> {
  const token = await fetchToken(options);
  const get = (path: string) => getMetadata(options, token, path);
  const [instanceId, ipv4, ipv6, availabilityZone, region] = await Promise.all([
    get('instance-id'),
    get('local-ipv4'),
    // Present only when the primary interface has an IPv6 address; 404 otherwise.
    get('ipv6'),
    get('placement/availability-zone'),
    get('placement/region'),
  ]);
  if (instanceId === undefined || availabilityZone === undefined) {
    throw new Error(
      `instance metadata at ${options.baseUrl} lacks instance-id or placement/availability-zone`,
    );
  }
  return {
    instanceId,
    availabilityZone,
    // placement/region exists on all current instances; the zone minus its letter is the fallback.
    region: region ?? availabilityZone.replace(/[a-z]$/, ''),
    ...(ipv4 ? { ipv4 } : {}),
    ...(ipv6 ? { ipv6 } : {}),
  };
}

/** The instance identity document, byte for byte, and its base64 RSA-SHA256 signature. */
export interface SignedIdentityDocument {
  /** Exactly as IMDS served it: the signature covers these bytes, whitespace included. */
  document: Buffer;
  /** Base64, line-wrapped as IMDS serves it. */
  signature: string;
}

/**
 * `/latest/dynamic/instance-identity/document` and `.../signature` (the base64 one, which AWS
 * signs with RSA-SHA256; not `pkcs7` nor `rsa2048`), with an IMDSv2 session token.
 */
export async function fetchIdentityDocument(options: ImdsOptions): Promise<SignedIdentityDocument> {
  const token = await fetchToken(options);
  const get = async (name: 'document' | 'signature'): Promise<Buffer> => {
    const response = await imdsRequest(
      new URL(`/latest/dynamic/instance-identity/${name}`, options.baseUrl),
      { headers: { 'X-aws-ec2-metadata-token': token }, timeoutMs: options.timeoutMs },
    );
    if (!ok(response.status)) throw new Error(`instance identity ${name}: HTTP ${response.status}`);
    return response.body;
  };
  const [document, signature] = await Promise.all([get('document'), get('signature')]);
  return { document, signature: signature.toString('utf8') };
}

export async function fetchToken(options: ImdsOptions): Promise<string> {
  let response: Awaited<ReturnType<typeof imdsRequest>>;
  try {
    response = await imdsRequest(new URL('/latest/api/token', options.baseUrl), {
      method: 'PUT',
      headers: { 'X-aws-ec2-metadata-token-ttl-seconds': TOKEN_TTL_SECONDS },
      timeoutMs: options.timeoutMs,
    });
  } catch (error) {
    throw new ImdsUnavailableError(
      `the EC2 instance metadata service at ${options.baseUrl} did not answer within ${options.timeoutMs} ms (${describeFailure(error)})`,
    );
  }
  if (!ok(response.status)) {
    // 403: IMDS is disabled on this instance; other statuses: not a real IMDS.
    throw new ImdsUnavailableError(
      `the EC2 instance metadata service at ${options.baseUrl} refused a session token (HTTP ${response.status})`,
    );
  }
  return response.body.toString('utf8').trim();
}

function ok(status: number): boolean {
  return status >= 200 && status < 300;
}

async function getMetadata(
  options: ImdsOptions,
  token: string,
  path: string,
): Promise<string | undefined> {
  const response = await imdsRequest(new URL(`/latest/meta-data/${path}`, options.baseUrl), {
    headers: { 'X-aws-ec2-metadata-token': token },
    timeoutMs: options.timeoutMs,
  });
  if (response.status === 404) return undefined;
  if (!ok(response.status)) throw new Error(`instance metadata ${path}: HTTP ${response.status}`);
  const text = response.body.toString('utf8').trim();
  // `ipv6` may list several addresses, one per line; the first is the primary.
  return text.split('\n')[0]?.trim() || undefined;
}

function describeFailure(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'timed out';
  const failure = error as { code?: string; message?: string };
  return failure.code ?? failure.message ?? String(error);
}

/** Istio locality `region/zone` from the instance placement. */
export function localityOf(identity: InstanceIdentity): string {
  return `${identity.region}/${identity.availabilityZone}`;
}
