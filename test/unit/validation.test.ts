import { describe, expect, it } from 'vitest';
import {
  isDns1123Label,
  isDns1123Subdomain,
  isIpAddress,
  isLabelKey,
  isLabelValue,
  isLocality,
  isNetworkName,
} from '../../lib/domain/validation.ts';

describe('isIpAddress', () => {
  it.each(['10.0.0.1', '::1', '2001:db8::1', 'fe80::1:2:3:4'])('accepts %s', (ip) => {
    expect(isIpAddress(ip)).toBe(true);
  });

  it.each(['', '10.0.0', '10.0.0.256', '10.0.0.1/24', '10.0.0.1:80', 'fe80::1%eth0', 'host'])(
    'refuses %j',
    (ip) => {
      expect(isIpAddress(ip)).toBe(false);
    },
  );
});

describe('isLabelKey', () => {
  it.each(['app', 'App.Version_2', 'example.com/tier', 'a'.repeat(63)])('accepts %s', (key) => {
    expect(isLabelKey(key)).toBe(true);
  });

  it.each(['', '-app', 'app-', 'a b', 'Example.com/tier', 'x/', '/x', 'a/b/c', 'a'.repeat(64)])(
    'refuses %j',
    (key) => {
      expect(isLabelKey(key)).toBe(false);
    },
  );
});

describe('isLabelValue', () => {
  it.each(['', 'v1', 'A-b_c.d', 'a'.repeat(63)])('accepts %j', (value) => {
    expect(isLabelValue(value)).toBe(true);
  });

  it.each(['-v', 'v-', 'a b', 'a/b', 'a'.repeat(64)])('refuses %j', (value) => {
    expect(isLabelValue(value)).toBe(false);
  });
});

describe('isLocality', () => {
  it.each(['us-east-1', 'us-east-1/us-east-1a', 'us-east-1/us-east-1a/rack_7'])(
    'accepts %s',
    (locality) => {
      expect(isLocality(locality)).toBe(true);
    },
  );

  it.each(['', 'a/b/c/d', 'a//b', '/a', 'a/', 'us east'])('refuses %j', (locality) => {
    expect(isLocality(locality)).toBe(false);
  });
});

describe('DNS-1123 names', () => {
  it('accepts a namespace label and refuses upper case, dots and 64 characters', () => {
    expect(isDns1123Label('team-a')).toBe(true);
    expect(isDns1123Label('Team-a')).toBe(false);
    expect(isDns1123Label('team.a')).toBe(false);
    expect(isDns1123Label('a'.repeat(64))).toBe(false);
  });

  it('accepts a dotted group subdomain up to 253 characters and refuses bad parts', () => {
    expect(isDns1123Subdomain('web.v2')).toBe(true);
    expect(isDns1123Subdomain(`${'a'.repeat(63)}.${'b'.repeat(189)}`)).toBe(true);
    expect(isDns1123Subdomain('a'.repeat(254))).toBe(false);
    expect(isDns1123Subdomain('web..v2')).toBe(false);
    expect(isDns1123Subdomain('web.-v2')).toBe(false);
    expect(isDns1123Subdomain('web_v2')).toBe(false);
    expect(isDns1123Subdomain('')).toBe(false);
  });

  it('accepts network names of letters, digits, dash, underscore and dot', () => {
    expect(isNetworkName('vpc-0a1b_2.c')).toBe(true);
    expect(isNetworkName('vpc 1')).toBe(false);
    expect(isNetworkName('-vpc')).toBe(false);
  });
});
