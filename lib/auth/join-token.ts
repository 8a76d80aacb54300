import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { UnauthenticatedError } from '../domain/errors.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { StoredToken } from '../domain/stored-token.ts';
import type { TokenStore } from './token-store.ts';

/**
 * Join tokens: `wrt.<id>.<secret>`. The id is the lookup key and may appear in logs and in
 * the CLI's listing; the secret is shown once, at creation, and only its SHA-256 is stored, so
 * a leaked table does not leak a usable token.
 */
export const TOKEN_PREFIX = 'wrt';

// 9 random bytes -> 12 base64url characters: unique enough for an operator-managed list.
const ID_BYTES = 9;
// 32 random bytes = 256 bits: the secret cannot be guessed, so a fast hash (SHA-256) suffices.
const SECRET_BYTES = 32;
const ID_PATTERN = /^[A-Za-z0-9_-]{12}$/;
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface JoinTokenInput {
  namespace: string;
  serviceAccount?: string;
  ttlMs: number;
  now: EpochMillis;
}

export interface ParsedJoinToken {
  id: string;
  secret: string;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * A new token's id: 12 base64url characters, never beginning with '-'. An id the operator types
 * as `registrar token revoke <id>` that began with '-' (one in 64 did) was read as an option
 * and refused as a usage error. Ids of that shape made before stay valid (ID_PATTERN); they go
 * after `--` on the command line.
 */
export function newTokenId(random: (bytes: number) => Buffer = randomBytes): string {
  for (;;) {
    const id = random(ID_BYTES).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** Creates a token: `token` goes to the operator once, `stored` goes to the TokenStore. */
export function createJoinToken(input: JoinTokenInput): { token: string; stored: StoredToken } {
  if (!Number.isFinite(input.ttlMs) || input.ttlMs <= 0) {
    throw new RangeError(`token lifetime must be positive, got ${input.ttlMs} ms`);
  }
  const id = newTokenId();
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  const stored: StoredToken = {
    id,
    secretHash: hashSecret(secret),
    namespace: input.namespace,
    createdAt: input.now,
    expiresAt: input.now + input.ttlMs,
  };
  if (input.serviceAccount !== undefined) stored.serviceAccount = input.serviceAccount;
  return { token: `${TOKEN_PREFIX}.${id}.${secret}`, stored };
}

/** Splits a presented token; undefined when it is not one (the caller must not echo it). */
export function parseJoinToken(text: string): ParsedJoinToken | undefined {
  const parts = text.trim().split('.');
  if (parts.length !== 3) return undefined;
  const [prefix, id, secret] = parts as [string, string, string];
  if (prefix !== TOKEN_PREFIX || !ID_PATTERN.test(id) || !SECRET_PATTERN.test(secret)) {
    return undefined;
  }
  return { id, secret };
}

/**
 * Returns the stored token when `presented` is a valid, unrevoked, unexpired token.
 * Every refusal is an UnauthenticatedError (401). The secret is checked before revocation and
 * expiry are reported, so only the holder of the secret learns why its token stopped working;
 * a caller guessing ids sees "unknown" either way. Messages never contain the presented text.
 */
export async function verifyJoinToken(
  tokens: Pick<TokenStore, 'getToken'>,
  presented: string,
  now: EpochMillis,
): Promise<StoredToken> {
  const parsed = parseJoinToken(presented);
  if (!parsed)
    throw new UnauthenticatedError('malformed join token; create one with registrar token create');
  const stored = await tokens.getToken(parsed.id);
  if (!stored || !secretMatches(stored.secretHash, parsed.secret)) {
    throw new UnauthenticatedError('unknown join token; create one with registrar token create');
  }
  if (stored.revokedAt !== undefined) {
    throw new UnauthenticatedError(`join token ${stored.id} was revoked; create a new one`);
  }
  // Expiry is inclusive: a token is usable strictly before expiresAt.
  if (now >= stored.expiresAt) {
    throw new UnauthenticatedError(`join token ${stored.id} has expired; create a new one`);
  }
  return stored;
}

/** Compares hashes in constant time so response timing does not reveal a partial match. */
function secretMatches(storedHash: string, secret: string): boolean {
  const expected = Buffer.from(storedHash, 'hex');
  const actual = Buffer.from(hashSecret(secret), 'hex');
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
