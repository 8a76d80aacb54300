import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * IAM mode: the WebSocket upgrade is a GET that API Gateway authorizes with SigV4 (service
 * `execute-api`). The signature goes in the query string (a presigned URL) rather than in
 * headers because the ws client adds its own upgrade headers (Sec-WebSocket-Key, ...) that
 * must not be part of the signature; only `host` is signed, and the URL carries the rest.
 */
export const EXECUTE_API = 'execute-api';
// Long enough for a slow upgrade; short so a logged URL is useless soon after.
const PRESIGN_EXPIRES_SECONDS = 60;

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
  const request = new HttpRequest({
    method: 'GET',
    protocol: parsed.protocol === 'ws:' ? 'http:' : 'https:',
    hostname: parsed.hostname,
    ...(parsed.port ? { port: Number(parsed.port) } : {}),
    path: parsed.pathname || '/',
    query: queryOf(parsed.searchParams),
    // The Host header the ws client will send: hostname plus the port when it is explicit.
    headers: { host: parsed.host },
  });
  const signer = new SignatureV4({
    credentials: options.credentials,
    region: options.region,
    service: EXECUTE_API,
    sha256: Sha256,
  });
  const signed = await signer.presign(request, {
    expiresIn: options.expiresInSeconds ?? PRESIGN_EXPIRES_SECONDS,
    ...(options.now ? { signingDate: options.now } : {}),
  });
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}?${serializeQuery(signed.query ?? {})}`;
}

/** `abc.execute-api.eu-west-1.amazonaws.com` -> `eu-west-1`; undefined for custom domains. */
export function regionFromUrl(url: string): string | undefined {
  const match = /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(new URL(url).hostname);
  return match?.[1];
}

function queryOf(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    query[key] = values.length === 1 ? (values[0] as string) : values;
  }
  return query;
}

/** RFC 3986 encoding, as SigV4 canonicalizes: `+` would be read back as a space. */
function serializeQuery(query: Record<string, string | string[] | null>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    const values = Array.isArray(value) ? value : [value ?? ''];
    for (const item of values) parts.push(`${uriEscape(key)}=${uriEscape(item)}`);
  }
  return parts.join('&');
}

function uriEscape(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
