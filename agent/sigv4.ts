import { createHash, createHmac } from 'node:crypto';

/**
 * IAM mode: the WebSocket upgrade is a GET that API Gateway authorizes with SigV4 (service
 * `execute-api`). The signature goes in the query string (a presigned URL) rather than in
 * headers because the ws client adds its own upgrade headers (Sec-WebSocket-Key, ...) that
 * must not be part of the signature; only `host` is signed, and the URL carries the rest.
 * The signer is the agent's own, on node:crypto: the SDK's signer brought about 1 MB of
 * bundled code for one GET (test/unit/agent-sigv4.test.ts checks it against the SDK's).
 */
export const EXECUTE_API = 'execute-api';
// Long enough for a slow upgrade; short so a logged URL is useless soon after.
const PRESIGN_EXPIRES_SECONDS = 60;
const ALGORITHM = 'AWS4-HMAC-SHA256';

/** The shape the AWS SDK's credential providers resolve to. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

export interface PresignOptions {
  region: string;
  credentials: AwsCredentials | (() => Promise<AwsCredentials>);
  /** Signing time; tests pass a fixed one. */
  now?: Date;
  expiresInSeconds?: number;
}

/** Returns `url` (ws:// or wss://) with `X-Amz-*` query parameters added. */
export async function presignConnectUrl(url: string, options: PresignOptions): Promise<string> {
  const parsed = new URL(url);
  const credentials =
    typeof options.credentials === 'function' ? await options.credentials() : options.credentials;
  const amzDate = (options.now ?? new Date()).toISOString().replace(/[-:]|\.\d{3}/g, '');
  const scope = `${amzDate.slice(0, 8)}/${options.region}/${EXECUTE_API}/aws4_request`;
  const query: [string, string][] = [...parsed.searchParams];
  query.push(
    ['X-Amz-Algorithm', ALGORITHM],
    ['X-Amz-Credential', `${credentials.accessKeyId}/${scope}`],
    ['X-Amz-Date', amzDate],
    ['X-Amz-Expires', String(options.expiresInSeconds ?? PRESIGN_EXPIRES_SECONDS)],
    ...(credentials.sessionToken
      ? [['X-Amz-Security-Token', credentials.sessionToken] as [string, string]]
      : []),
    ['X-Amz-SignedHeaders', 'host'],
  );
  // Sorted by encoded name, then by encoded value (a repeated name such as `ip`).
  const canonicalQuery = query
    .map(([key, value]) => [uriEscape(key), uriEscape(value)])
    .sort(([k1, v1], [k2, v2]) => compare(k1, k2) || compare(v1, v2))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
  const canonicalRequest = [
    'GET',
    canonicalPath(parsed.pathname),
    canonicalQuery,
    // The Host header the ws client will send: hostname plus the port when it is explicit.
    `host:${parsed.host}\n`,
    'host',
    // The GET has no body: the hash of the empty payload (UNSIGNED-PAYLOAD is S3's).
    sha256Hex(''),
  ].join('\n');
  const stringToSign = [ALGORITHM, amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  let key: Buffer | string = `AWS4${credentials.secretAccessKey}`;
  for (const part of [amzDate.slice(0, 8), options.region, EXECUTE_API, 'aws4_request']) {
    key = hmac(key, part);
  }
  const signature = createHmac('sha256', key).update(stringToSign).digest('hex');
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}?${canonicalQuery}&X-Amz-Signature=${signature}`;
}

/** `abc.execute-api.eu-west-1.amazonaws.com` -> `eu-west-1`; undefined for custom domains. */
export function regionFromUrl(url: string): string | undefined {
  const match = /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(new URL(url).hostname);
  return match?.[1];
}

/**
 * The path as SigV4 canonicalizes it for every service but S3: dot segments resolved (URL
 * parsing did), each segment URI-encoded once more (the pathname is already encoded).
 */
function canonicalPath(pathname: string): string {
  return (pathname || '/').split('/').map(uriEscape).join('/');
}

function compare(a = '', b = ''): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

/** RFC 3986 encoding, as SigV4 canonicalizes: `+` would be read back as a space. */
function uriEscape(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
