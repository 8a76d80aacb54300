import { describe, expect, it } from 'vitest';
import {
  createJoinToken,
  hashSecret,
  newTokenId,
  parseJoinToken,
  verifyJoinToken,
} from '../../lib/auth/join-token.ts';
import type { TokenStore } from '../../lib/auth/token-store.ts';
import { UnauthenticatedError } from '../../lib/domain/errors.ts';
import type { StoredToken } from '../../lib/domain/stored-token.ts';

const NOW = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;

/** A map-backed TokenStore: the DynamoDB adapter is exercised by the integration tests. */
function memoryTokens(...tokens: StoredToken[]): TokenStore {
  const byId = new Map(tokens.map((token) => [token.id, { ...token }]));
  return {
    putToken: async (token) => void byId.set(token.id, token),
    getToken: async (id) => byId.get(id),
    listTokens: async () => [...byId.values()],
    revokeToken: async (id, at) => {
      const token = byId.get(id);
      if (token) token.revokedAt = at;
      return token !== undefined;
    },
  };
}

describe('createJoinToken', () => {
  it('stores only the SHA-256 of the secret, never the secret itself', () => {
    const { token, stored } = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    const secret = token.split('.')[2] ?? '';
    expect(stored.secretHash).toBe(hashSecret(secret));
    expect(JSON.stringify(stored)).not.toContain(secret);
  });

  it('scopes the token to its namespace and service account and sets the expiry', () => {
    const { stored } = createJoinToken({
      namespace: 'shop',
      serviceAccount: 'web',
      ttlMs: HOUR,
      now: NOW,
    });
    expect(stored).toMatchObject({
      namespace: 'shop',
      serviceAccount: 'web',
      createdAt: NOW,
      expiresAt: NOW + HOUR,
    });
  });

  it('creates a different token every time', () => {
    const first = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    const second = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    expect(first.token).not.toBe(second.token);
    expect(first.stored.id).not.toBe(second.stored.id);
  });

  it('refuses a lifetime of zero', () => {
    expect(() => createJoinToken({ namespace: 'shop', ttlMs: 0, now: NOW })).toThrow(RangeError);
  });
});

describe('parseJoinToken', () => {
  it('reads back the id and secret of a created token', () => {
    const { token, stored } = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    expect(parseJoinToken(token)?.id).toBe(stored.id);
  });

  it.each([
    '',
    'wrt',
    'wrt.abc.def',
    `xyz.AAAAAAAAAAAA.${'A'.repeat(43)}`,
    'wrt.AAAAAAAAAAAA.short',
  ])('refuses %j', (text) => {
    expect(parseJoinToken(text)).toBeUndefined();
  });
});

describe('verifyJoinToken', () => {
  it('returns the stored token for a valid one', async () => {
    const { token, stored } = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    await expect(verifyJoinToken(memoryTokens(stored), token, NOW + 1)).resolves.toEqual(stored);
  });

  it('refuses a malformed token without echoing it', async () => {
    const presented = 'not-a-token-secret-value';
    const error = await verifyJoinToken(memoryTokens(), presented, NOW).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthenticatedError);
    expect((error as Error).message).not.toContain(presented);
  });

  it('refuses an unknown token id', async () => {
    const { token } = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    await expect(verifyJoinToken(memoryTokens(), token, NOW)).rejects.toThrow(/unknown join token/);
  });

  it('refuses a known id with the wrong secret, and does not say the id exists', async () => {
    const { token, stored } = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    const forged = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    const error = await verifyJoinToken(memoryTokens(stored), forged, NOW).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthenticatedError);
    expect((error as Error).message).toMatch(/unknown join token/);
    expect((error as Error).message).not.toContain(forged);
  });

  it('refuses a revoked token', async () => {
    const { token, stored } = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    const tokens = memoryTokens(stored);
    await tokens.revokeToken(stored.id, NOW + 1);
    await expect(verifyJoinToken(tokens, token, NOW + 2)).rejects.toThrow(/revoked/);
  });

  it('accepts a token just before it expires and refuses it at the expiry time', async () => {
    const { token, stored } = createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW });
    await expect(
      verifyJoinToken(memoryTokens(stored), token, NOW + HOUR - 1),
    ).resolves.toBeDefined();
    await expect(verifyJoinToken(memoryTokens(stored), token, NOW + HOUR)).rejects.toThrow(
      /expired/,
    );
  });
});

describe('a token id', () => {
  it("never begins with '-', which a command line would read as an option", () => {
    // Bytes whose base64url begins with '-' (0xf8 -> '-' as the first six bits are 62), then
    // ordinary ones: the id is drawn again.
    const draws = [Buffer.alloc(9, 0xf8), Buffer.alloc(9, 0x41)];
    const id = newTokenId(() => draws.shift() as Buffer);
    expect(id).toBe(Buffer.alloc(9, 0x41).toString('base64url'));
    expect(draws).toHaveLength(0);
  });

  it('keeps 12 base64url characters, and 5,000 new ones have no leading dash', () => {
    const ids = Array.from(
      { length: 5_000 },
      () => createJoinToken({ namespace: 'shop', ttlMs: HOUR, now: NOW }).stored.id,
    );
    expect(ids.every((id) => /^[A-Za-z0-9_][A-Za-z0-9_-]{11}$/.test(id))).toBe(true);
  });

  it('of the old shape (a leading dash) is still a valid token', () => {
    const token = `wrt.-${'A'.repeat(11)}.${'B'.repeat(43)}`;
    expect(parseJoinToken(token)).toEqual({ id: `-${'A'.repeat(11)}`, secret: 'B'.repeat(43) });
  });
});
