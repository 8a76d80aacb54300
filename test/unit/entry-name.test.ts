import { describe, expect, it } from 'vitest';
import { entryName } from '../../lib/domain/entry-name.ts';
import { isDns1123Subdomain } from '../../lib/domain/validation.ts';

describe('entryName', () => {
  it('joins group and IPv4 address as Istio does', () => {
    expect(entryName('web', '10.0.0.1')).toBe('web-10.0.0.1');
  });

  it('appends the network when one is given', () => {
    expect(entryName('web', '10.0.0.1', 'vpc-1')).toBe('web-10.0.0.1-vpc-1');
  });

  it('replaces the colons of an IPv6 address with dashes', () => {
    const name = entryName('web', '2001:db8::1');
    expect(name).toBe('web-2001-db8--1');
    expect(isDns1123Subdomain(name)).toBe(true);
  });

  it('lower-cases and replaces characters DNS-1123 does not allow', () => {
    const name = entryName('web', 'FE80::A', 'Net_West');
    expect(name).toBe('web-fe80--a-net-west');
    expect(isDns1123Subdomain(name)).toBe(true);
  });

  it('trims characters that would leave a dot-separated part without alphanumeric ends', () => {
    const name = entryName('web', '10.0.0.1', '-net.');
    expect(isDns1123Subdomain(name)).toBe(true);
    expect(name).toBe('web-10.0.0.1--net');
  });

  it('is deterministic: the same VM always gets the same name', () => {
    const long = 'g'.repeat(250);
    expect(entryName(long, '10.0.0.1', 'net')).toBe(entryName(long, '10.0.0.1', 'net'));
  });

  it('keeps a name of exactly 253 characters as it is', () => {
    const group = 'a'.repeat(253 - '-10.0.0.1'.length);
    expect(entryName(group, '10.0.0.1')).toBe(`${group}-10.0.0.1`);
  });

  it('shortens a name over 253 characters to a valid subdomain that keeps the tail', () => {
    const name = entryName('a'.repeat(300), '10.0.0.42', 'east');
    expect(name.length).toBeLessThanOrEqual(253);
    expect(isDns1123Subdomain(name)).toBe(true);
    expect(name).toMatch(/-10\.0\.0\.42-east-[0-9a-f]{10}$/);
  });

  it('gives two long names that share a tail different names', () => {
    const tail = `x${'b'.repeat(260)}`;
    const first = entryName(`one-${tail}`, '10.0.0.1');
    const second = entryName(`two-${tail}`, '10.0.0.1');
    expect(first).not.toBe(second);
    expect(first.length).toBeLessThanOrEqual(253);
    expect(second.length).toBeLessThanOrEqual(253);
  });

  it('starts a shortened name with an alphanumeric even when the cut lands on a dash', () => {
    // Sweep the cut position across dashes and dots: every result must stay valid.
    for (let pad = 0; pad < 12; pad += 1) {
      const group = `${'ab-.'.repeat(70)}${'c'.repeat(pad)}`.replace(/\.-/g, '.a');
      const name = entryName(group, '2001:db8::1');
      expect(isDns1123Subdomain(name), name).toBe(true);
    }
  });
});
