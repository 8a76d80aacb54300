import { createHash, timingSafeEqual } from 'node:crypto';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256 } from '../../lib/aws/node-sha256.ts';

/**
 * API Gateway's IAM authorization of a WebSocket upgrade, for the local gateway: the request is
 * presigned (SigV4 in the query string, service `execute-api`), and API Gateway recomputes the
 * signature with the caller's secret before any route runs. A refusal is a 403 with
 * `{"message": ...}` and an `x-amzn-ErrorType` header, in the words AWS uses (IAM User Guide,
 * "Troubleshoot signed requests"; API Gateway knowledge center, "troubleshoot 403 errors");
 * an accepted caller becomes `requestContext.identity` on `$connect`.
 */

/** A local "IAM principal": what AWS would know about the owner of an access key. */
export interface IamCallerCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** The principal's ARN, e.g. `arn:aws:sts::000000000000:assumed-role/web-vm/i-0123`. */
  arn: string;
  /** Temporary credentials (an instance profile's) also carry a session token. */
  sessionToken?: string;
}

/** `requestContext.identity` of an IAM-authorized request, as API Gateway fills it in. */
export interface IamIdentity {
  accountId: string;
  accessKey: string;
  /** `<unique id>:<session>` for an assumed role, the user's unique id for an IAM user. */
  caller: string;
  user: string;
  userArn: string;
  cognitoIdentityPoolId: null;
  cognitoIdentityId: null;
  cognitoAuthenticationType: null;
  cognitoAuthenticationProvider: null;
  principalOrgId: null;
}

/** The parts of the upgrade request a presigned URL signs. */
export interface PresignedRequest {
  method: string;
  /** The raw path, as it arrived (before `?`). */
  path: string;
  headers: Record<string, string>;
  query: Record<string, string[]>;
}

export type SigV4Verdict =
  | { ok: true; identity: IamIdentity }
  | { ok: false; statusCode: 403; errorType: string; message: string };

export interface SigV4VerifierOptions {
  callers: readonly IamCallerCredentials[];
  /** The API's region: a signature scoped to another one is refused. */
  region: string;
  /** The gateway's clock, epoch ms. */
  now?: () => number;
}

export const EXECUTE_API = 'execute-api';
const ALGORITHM = 'AWS4-HMAC-SHA256';
// SigV4's allowance for clock skew: a request may be dated at most 5 min in the future.
const MAX_SKEW_MS = 5 * 60_000;
// SigV4's longest presigned lifetime: 7 days = 604,800 s.
const MAX_EXPIRES_SECONDS = 604_800;
const AUTH_PARAMS = [
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
  'X-Amz-Security-Token',
] as const;
const REQUIRED_PARAMS = AUTH_PARAMS.filter((name) => name !== 'X-Amz-Security-Token');
const ARN = /^arn:(aws|aws-cn|aws-us-gov):(sts|iam)::(\d{12}):(.+)$/;

export class SigV4Verifier {
  readonly #callers: ReadonlyMap<string, IamCallerCredentials>;
  readonly #region: string;
  readonly #now: () => number;

  constructor(options: SigV4VerifierOptions) {
    this.#callers = validateCallers(options.callers);
    this.#region = options.region;
    this.#now = options.now ?? Date.now;
  }

  async verify(request: PresignedRequest): Promise<SigV4Verdict> {
    const param = (name: string) => request.query[name]?.[0];
    if (!AUTH_PARAMS.some((name) => param(name) !== undefined)) {
      // API Gateway's answer to an unsigned request on an IAM-authorized route.
      return refuse('MissingAuthenticationTokenException', 'Missing Authentication Token');
    }
    const missing = REQUIRED_PARAMS.filter((name) => !param(name));
    if (missing.length > 0) {
      return incomplete(
        `AWS query-string parameters must include ${REQUIRED_PARAMS.map((n) => `'${n}'`).join(', ')}; missing ${missing.join(', ')}. Re-examine the query-string parameters.`,
      );
    }
    const given = Object.fromEntries(REQUIRED_PARAMS.map((name) => [name, param(name) ?? '']));
    if (given['X-Amz-Algorithm'] !== ALGORITHM) {
      return incomplete(`Unsupported AWS 'algorithm': '${given['X-Amz-Algorithm']}'.`);
    }
    const credential = (given['X-Amz-Credential'] as string).split('/');
    const [accessKeyId, day, region, service, terminator] = credential;
    if (credential.length !== 5 || !accessKeyId || terminator !== 'aws4_request') {
      return incomplete(
        `Credential '${given['X-Amz-Credential']}' is malformed; expected <access key>/<YYYYMMDD>/<region>/<service>/aws4_request.`,
      );
    }
    const amzDate = given['X-Amz-Date'] as string;
    const signedAt = parseAmzDate(amzDate);
    if (signedAt === undefined) {
      return incomplete(
        `X-Amz-Date '${amzDate}' must be in the ISO 8601 basic format YYYYMMDD'T'HHMMSS'Z'.`,
      );
    }
    if (day !== amzDate.slice(0, 8)) {
      return invalid(
        `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${day}' != '${amzDate.slice(0, 8)}', from '${amzDate}'.`,
      );
    }
    if (region !== this.#region) {
      return invalid(`Credential should be scoped to a valid region, not '${region}'.`);
    }
    if (service !== EXECUTE_API) {
      return invalid(`Credential should be scoped to correct service: '${EXECUTE_API}'.`);
    }
    const expires = Number(given['X-Amz-Expires']);
    if (
      !/^\d+$/.test(given['X-Amz-Expires'] as string) ||
      expires < 1 ||
      expires > MAX_EXPIRES_SECONDS
    ) {
      return incomplete(
        `X-Amz-Expires must be a whole number of seconds from 1 to ${MAX_EXPIRES_SECONDS}, got '${given['X-Amz-Expires']}'.`,
      );
    }
    const now = this.#now();
    if (signedAt > now + MAX_SKEW_MS) {
      return invalid(
        `Signature not yet current: ${amzDate} is still later than ${amzDateOf(now + MAX_SKEW_MS)} (${amzDateOf(now)} + 5 min.)`,
      );
    }
    if (now > signedAt + expires * 1000) {
      return invalid(
        `Signature expired: ${amzDate} is now earlier than ${amzDateOf(now - expires * 1000)} (${amzDateOf(now)} - ${expires} sec.)`,
      );
    }

    const caller = this.#callers.get(accessKeyId);
    // An unknown key and a session token that does not belong to it look the same to AWS.
    if (!caller || (param('X-Amz-Security-Token') ?? '') !== (caller.sessionToken ?? '')) {
      return refuse(
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      );
    }
    const signedHeaders = (given['X-Amz-SignedHeaders'] as string).split(';');
    if (!signedHeaders.includes('host')) {
      return incomplete(
        `X-Amz-SignedHeaders must include 'host', got '${given['X-Amz-SignedHeaders']}'.`,
      );
    }
    const expected = await expectedSignature(request, caller, {
      region,
      signedAt,
      expires,
      signedHeaders,
    });
    if (expected === undefined || !sameText(expected, given['X-Amz-Signature'] as string)) {
      return invalid(
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
      );
    }
    return { ok: true, identity: identityOf(caller) };
  }
}

/**
 * Presigns the request as the caller would have: the same method, path, signed headers and
 * query (without the signature parameters, which presign adds back), with the caller's secret,
 * the claimed date and lifetime. Undefined when a claimed signed header was not sent.
 */
async function expectedSignature(
  request: PresignedRequest,
  caller: IamCallerCredentials,
  claim: { region: string; signedAt: number; expires: number; signedHeaders: string[] },
): Promise<string | undefined> {
  const headers: Record<string, string> = {};
  for (const name of claim.signedHeaders) {
    const value = Object.entries(request.headers).find(([key]) => key.toLowerCase() === name)?.[1];
    if (value === undefined) return undefined;
    headers[name] = value;
  }
  const query: Record<string, string | string[]> = {};
  for (const [name, values] of Object.entries(request.query)) {
    if ((AUTH_PARAMS as readonly string[]).includes(name)) continue;
    query[name] = values.length === 1 ? (values[0] as string) : values;
  }
  const host = headers.host ?? '';
  const signer = new SignatureV4({
    credentials: {
      accessKeyId: caller.accessKeyId,
      secretAccessKey: caller.secretAccessKey,
      ...(caller.sessionToken ? { sessionToken: caller.sessionToken } : {}),
    },
    region: claim.region,
    service: EXECUTE_API,
    sha256: NodeSha256,
  });
  const signed = await signer.presign(
    new HttpRequest({
      method: request.method,
      protocol: 'https:',
      hostname: host.replace(/:\d+$/, ''),
      path: request.path || '/',
      query,
      headers,
    }),
    {
      signingDate: new Date(claim.signedAt),
      expiresIn: claim.expires,
      // Sign exactly what the caller listed, even headers SigV4 leaves out by default.
      signableHeaders: new Set(claim.signedHeaders),
      unhoistableHeaders: new Set(claim.signedHeaders),
    },
  );
  const signedList = signed.query?.['X-Amz-SignedHeaders'];
  // The caller's list must be the one these headers produce (sorted, lower case).
  if (signedList !== claim.signedHeaders.join(';')) return undefined;
  const signature = signed.query?.['X-Amz-Signature'];
  return typeof signature === 'string' ? signature : undefined;
}

/**
 * What API Gateway reports for the caller. AWS fills `caller`/`user` with the principal's
 * unique id (`AROA...:<session>` for a role); locally there is no IAM, so a stable id is
 * derived from the ARN.
 */
export function identityOf(caller: IamCallerCredentials): IamIdentity {
  const match = ARN.exec(caller.arn);
  const account = match?.[3] ?? '000000000000';
  const resource = match?.[4] ?? caller.arn;
  const assumed = /^assumed-role\/([^/]+)\/(.+)$/.exec(resource);
  const uniqueId = (prefix: string, of: string) =>
    `${prefix}${createHash('sha256').update(of).digest('hex').slice(0, 17).toUpperCase()}`;
  const principal = assumed
    ? `${uniqueId('AROA', `${account}:${assumed[1]}`)}:${assumed[2]}`
    : uniqueId('AIDA', caller.arn);
  return {
    accountId: account,
    accessKey: caller.accessKeyId,
    caller: principal,
    user: principal,
    userArn: caller.arn,
    cognitoIdentityPoolId: null,
    cognitoIdentityId: null,
    cognitoAuthenticationType: null,
    cognitoAuthenticationProvider: null,
    principalOrgId: null,
  };
}

/** Checks the configured callers once, at start: a bad entry names itself. */
export function validateCallers(
  callers: readonly IamCallerCredentials[],
): ReadonlyMap<string, IamCallerCredentials> {
  const byKey = new Map<string, IamCallerCredentials>();
  callers.forEach((caller, index) => {
    const where = `iamCallers[${index}]`;
    if (typeof caller !== 'object' || caller === null)
      throw new TypeError(`${where} is not an object`);
    for (const field of ['accessKeyId', 'secretAccessKey', 'arn'] as const) {
      if (typeof caller[field] !== 'string' || caller[field] === '') {
        throw new TypeError(`${where}.${field} must be a non-empty string`);
      }
    }
    if (caller.sessionToken !== undefined && typeof caller.sessionToken !== 'string') {
      throw new TypeError(`${where}.sessionToken must be a string`);
    }
    if (!/^[A-Za-z0-9]+$/.test(caller.accessKeyId)) {
      throw new TypeError(
        `${where}.accessKeyId '${caller.accessKeyId}' must be letters and digits`,
      );
    }
    if (!ARN.test(caller.arn)) {
      throw new TypeError(
        `${where}.arn '${caller.arn}' is not an IAM or STS ARN; use e.g. arn:aws:sts::000000000000:assumed-role/web-vm/i-0123`,
      );
    }
    if (byKey.has(caller.accessKeyId)) {
      throw new TypeError(`${where}.accessKeyId '${caller.accessKeyId}' is listed twice`);
    }
    byKey.set(caller.accessKeyId, caller);
  });
  return byKey;
}

function refuse(errorType: string, message: string): SigV4Verdict {
  return { ok: false, statusCode: 403, errorType, message };
}

const incomplete = (message: string) => refuse('IncompleteSignatureException', message);
const invalid = (message: string) => refuse('InvalidSignatureException', message);

/** `20260301T120000Z` -> epoch ms; undefined when it is not that format or not a real time. */
function parseAmzDate(text: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  const ms = Date.UTC(y as number, (mo as number) - 1, d, h, mi, s);
  return amzDateOf(ms) === text ? ms : undefined;
}

function amzDateOf(epochMs: number): string {
  return new Date(epochMs)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** Compares without leaking, through timing, how much of a guessed signature was right. */
function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
