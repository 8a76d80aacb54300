import { describe, expect, it } from 'vitest';
import { canonicalAddress } from '../../lib/domain/address.ts';

/** One address, one spelling, and only addresses another host can reach a VM at. */
describe('canonicalAddress', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::ffff:127.0.0.1', 'loopback'],
  ])('refuses %s, saying it is %s', (address, what) => {
    const check = canonicalAddress(address);
    expect(check.ok).toBe(false);
    expect(check.ok ? '' : check.problem).toContain(what);
  });

  it.each([['10.0.0.1/24'], ['10.0.0.1:80'], ['fe80::1%eth0'], ['web'], ['']])(
    'refuses %j as not an address',
    (text) => {
      expect(canonicalAddress(text)).toEqual({
        ok: false,
        problem: 'must be an IPv4 or IPv6 address',
      });
    },
  );

  it('reads an IPv4-mapped IPv6 address as the IPv4 address it carries', () => {
    expect(canonicalAddress('::ffff:10.0.0.1')).toEqual({ ok: true, address: '10.0.0.1' });
    expect(canonicalAddress('::FFFF:0a00:0001')).toEqual({ ok: true, address: '10.0.0.1' });
  });

  it('writes IPv6 in its canonical form (lower case, zeros compressed)', () => {
    expect(canonicalAddress('2001:DB8:0:0:0:0:0:1')).toEqual({ ok: true, address: '2001:db8::1' });
    expect(canonicalAddress('2001:db8:0000::0001')).toEqual({ ok: true, address: '2001:db8::1' });
  });

  it('accepts private and public unicast addresses as given', () => {
    for (const address of ['10.0.0.1', '172.31.255.254', '192.168.1.1', '54.239.28.85'])
      expect(canonicalAddress(address)).toEqual({ ok: true, address });
    expect(canonicalAddress('fd00::1')).toEqual({ ok: true, address: 'fd00::1' });
  });
});
