import { describe, expect, it } from 'vitest';
import { canonicalAddress, embeddedIpv4, parseIpAddress } from '../../lib/domain/address.ts';

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

/**
 * The attacker: a token holder registers the metadata service (or another address rule 1
 * refuses) in a spelling the plain IPv4 check does not know, hoping the mesh, a dual-stack
 * socket or a NAT64 gateway delivers it to 169.254.169.254.
 */
describe('canonicalAddress: every spelling of a refused address', () => {
  it.each([
    ['fd00:ec2::254', 'instance metadata service'],
    ['FD00:0EC2:0000:0000:0000:0000:0000:0254', 'instance metadata service'],
    ['fd00:ec2::253', 'DNS resolver'],
    ['fd00:ec2::123', 'time server'],
    ['fd00:ec2::1', 'fd00:ec2::/64'],
    ['fe80::a9fe:a9fe', 'link-local'],
    ['::ffff:169.254.169.254', 'instance metadata service'],
    ['::ffff:a9fe:a9fe', 'instance metadata service'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'instance metadata service'],
    ['::169.254.169.254', 'IPv4-compatible form of 169.254.169.254'],
    ['::a9fe:a9fe', 'IPv4-compatible form of 169.254.169.254'],
    ['::ffff:0:169.254.169.254', 'IPv4-translated form of 169.254.169.254'],
    ['64:ff9b::169.254.169.254', 'NAT64 form of 169.254.169.254'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 form of 169.254.169.254'],
    ['64:ff9b::7f00:1', 'NAT64 form of 127.0.0.1, a loopback'],
    ['64:ff9b::e000:1', 'NAT64 form of 224.0.0.1, a multicast'],
    ['64:ff9b::ffff:ffff', 'NAT64 form of 255.255.255.255, the broadcast'],
    // 64:ff9b:1::/48 (RFC 8215) with the IPv4 address after a /48, /56, /64 and /96 prefix.
    ['64:ff9b:1:a9fe:a9:fe00::', 'NAT64 form of 169.254.169.254'],
    ['64:ff9b:1:a9:fe:a9fe::', 'NAT64 form of 169.254.169.254'],
    ['64:ff9b:1:0:a9:fea9:fe00:0', 'NAT64 form of 169.254.169.254'],
    ['64:ff9b:1::a9fe:a9fe', 'NAT64 form of 169.254.169.254'],
    // A /96 translator prefix inside the /48 with a non-zero byte 8 still translates.
    ['64:ff9b:1:0:100::a9fe:a9fe', 'NAT64 form of 169.254.169.254'],
  ])('refuses %s (%s)', (address, what) => {
    const check = canonicalAddress(address);
    expect(check.ok).toBe(false);
    expect(check.ok ? '' : check.problem).toContain(what);
  });

  it.each([
    ['0xa9fea9fe'],
    ['2852039166'],
    ['0251.0376.0251.0376'],
    ['169.254.43518'],
    ['0xa9.0xfe.0xa9.0xfe'],
    ['169.254.169.254.'],
  ])('refuses the inet_aton spelling %s as not an address', (text) => {
    expect(canonicalAddress(text)).toEqual({
      ok: false,
      problem: 'must be an IPv4 or IPv6 address',
    });
  });

  it('refuses an IPv4-compatible address of an allowed IPv4 address, naming the IPv4 one', () => {
    expect(canonicalAddress('::10.0.0.1')).toEqual({
      ok: false,
      problem:
        'is an IPv4-compatible IPv6 address (deprecated by RFC 4291, routed by nothing); give the IPv4 address 10.0.0.1 itself',
    });
  });

  it('accepts NAT64 and ULA addresses that reach an allowed host, in canonical form', () => {
    expect(canonicalAddress('64:ff9b::10.0.0.1')).toEqual({ ok: true, address: '64:ff9b::a00:1' });
    expect(canonicalAddress('64:FF9B:1::0A00:0001')).toEqual({
      ok: true,
      address: '64:ff9b:1::a00:1',
    });
    expect(canonicalAddress('fd00:ec3::254')).toEqual({ ok: true, address: 'fd00:ec3::254' });
    expect(canonicalAddress('fd00:ec2:0:1::254')).toEqual({
      ok: true,
      address: 'fd00:ec2:0:1::254',
    });
  });
});

describe('parseIpAddress and embeddedIpv4 (what CIDR checks compare)', () => {
  it('gives the bytes of IPv4, IPv6 and IPv4-mapped addresses (the last as IPv4)', () => {
    expect(parseIpAddress('10.1.2.3')).toEqual({
      family: 4,
      text: '10.1.2.3',
      bytes: [10, 1, 2, 3],
    });
    expect(parseIpAddress('::ffff:10.1.2.3')).toEqual({
      family: 4,
      text: '10.1.2.3',
      bytes: [10, 1, 2, 3],
    });
    expect(parseIpAddress('2001:db8::102:304')?.bytes).toEqual([
      0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4,
    ]);
    expect(parseIpAddress('10.0.0.1/32')).toBeUndefined();
  });

  it('finds the IPv4 host an IPv6 spelling reaches, and none in an ordinary address', () => {
    const nat64 = parseIpAddress('64:ff9b::10.96.0.1');
    expect(nat64 && embeddedIpv4(nat64).map((e) => [e.how, e.ipv4.text])).toEqual([
      ['NAT64', '10.96.0.1'],
    ]);
    const plain = parseIpAddress('2001:db8::a60:1');
    expect(plain && embeddedIpv4(plain)).toEqual([]);
    const loopback = parseIpAddress('::1');
    expect(loopback && embeddedIpv4(loopback)).toEqual([]);
  });
});
