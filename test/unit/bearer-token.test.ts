import { describe, expect, it } from 'vitest';
import { UnauthenticatedError } from '../../lib/domain/errors.ts';
import { bearerToken } from '../../lib/protocol/bearer-token.ts';

describe('bearerToken', () => {
  it('reads the token whatever the case of the header name and scheme', () => {
    expect(bearerToken({ Authorization: 'Bearer abc' })).toBe('abc');
    expect(bearerToken({ authorization: 'bearer abc' })).toBe('abc');
    expect(bearerToken({ AUTHORIZATION: 'BEARER  abc ' })).toBe('abc');
  });

  it('falls back to the multi-value headers', () => {
    expect(bearerToken({}, { authorization: ['Bearer abc'] })).toBe('abc');
  });

  it('refuses a missing header', () => {
    expect(() => bearerToken({ Host: 'api' })).toThrow(UnauthenticatedError);
    expect(() => bearerToken(null)).toThrow(UnauthenticatedError);
  });

  it('refuses another scheme without repeating the credentials', () => {
    const header = 'Basic c2VjcmV0LXBhc3N3b3Jk';
    const error = (() => {
      try {
        bearerToken({ Authorization: header });
      } catch (e) {
        return e as Error;
      }
      throw new Error('expected a refusal');
    })();
    expect(error).toBeInstanceOf(UnauthenticatedError);
    expect(error.message).not.toContain('c2VjcmV0LXBhc3N3b3Jk');
  });
});
