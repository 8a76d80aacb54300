import { describe, expect, it } from 'vitest';
import { authenticatedBy, connectionsToCut } from '../../lib/auth/revocation.ts';

const TOKEN = { kind: 'token' as const, id: 'aaaaaaaaaaaa', namespace: 'shop' };
const POLICY = {
  kind: 'policy' as const,
  roleArn: 'arn:aws:iam::111122223333:role/web-vm',
  namespace: 'shop',
};
const entry = { namespace: 'shop', name: 'web-10.0.0.1' };

describe('which connections a revoked credential authenticated', () => {
  it('matches a token by its principal, and no other token', () => {
    expect(authenticatedBy(TOKEN, 'token:aaaaaaaaaaaa')).toBe(true);
    expect(authenticatedBy(TOKEN, 'token:aaaaaaaaaaab')).toBe(false);
    expect(authenticatedBy(TOKEN, 'arn:aws:sts::111122223333:assumed-role/web-vm/i-0')).toBe(false);
  });

  it("matches a policy by the role of the session, not by another role or account's", () => {
    expect(authenticatedBy(POLICY, 'arn:aws:sts::111122223333:assumed-role/web-vm/i-0abc')).toBe(
      true,
    );
    expect(authenticatedBy(POLICY, 'arn:aws:sts::111122223333:assumed-role/web-vm2/i-0')).toBe(
      false,
    );
    expect(authenticatedBy(POLICY, 'arn:aws:sts::999999999999:assumed-role/web-vm/i-0')).toBe(
      false,
    );
    expect(authenticatedBy(POLICY, 'token:aaaaaaaaaaaa')).toBe(false);
  });

  it('cuts only the holders the credential let in, when each holder records its principal', () => {
    expect(
      connectionsToCut(
        {
          entry,
          newestPrincipal: 'token:bbbbbbbbbbbb',
          holders: [
            { connectionId: 'a', principal: 'token:aaaaaaaaaaaa' },
            { connectionId: 'b', principal: 'token:bbbbbbbbbbbb' },
          ],
        },
        TOKEN,
      ),
    ).toEqual(['a']);
  });

  it("judges a holder recorded before holders carried a principal by the entry's identity", () => {
    const legacy = { entry, holders: [{ connectionId: 'x' }, { connectionId: 'y' }] };
    expect(connectionsToCut({ ...legacy, newestPrincipal: 'token:aaaaaaaaaaaa' }, TOKEN)).toEqual([
      'x',
      'y',
    ]);
    expect(connectionsToCut({ ...legacy, newestPrincipal: 'token:cccccccccccc' }, TOKEN)).toEqual(
      [],
    );
    expect(connectionsToCut(legacy, TOKEN)).toEqual([]);
  });
});
