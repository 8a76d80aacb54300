/**
 * Every spelling of an address the registry refuses is refused, and every spelling of an
 * address it accepts is accepted as one canonical address. Random IPv4 hosts are written as
 * IPv4, IPv4-mapped (dotted and hex), IPv4-compatible, IPv4-translated and NAT64 (the
 * well-known /96 and the local-use /48 at each RFC 6052 prefix length), in upper or lower
 * case, with or without leading zeros.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalAddress } from '../../lib/domain/address.ts';

type Bytes = [number, number, number, number];

const hex = (a: number, b: number) => ((a << 8) | b).toString(16);
const dotted = (v4: Bytes) => v4.join('.');

/** RFC 6052: the IPv4 bytes after a prefix of `length` bits, skipping byte 8. */
function nat64(prefix: number[], length: number, v4: Bytes): string {
  const bytes = [...prefix, ...Array(16 - prefix.length).fill(0)];
  let at = length / 8;
  for (const byte of v4) {
    if (at === 8) at++;
    bytes[at++] = byte;
  }
  const groups = [];
  for (let i = 0; i < 16; i += 2) groups.push(hex(bytes[i] ?? 0, bytes[i + 1] ?? 0));
  return groups.join(':');
}

/** The spellings of one IPv4 host that an IPv6 socket, SIIT or NAT64 delivers to it. */
function spellings(v4: Bytes): string[] {
  const [a, b, c, d] = v4;
  return [
    `::ffff:${dotted(v4)}`,
    `::ffff:${hex(a, b)}:${hex(c, d)}`,
    `0:0:0:0:0:FFFF:${hex(a, b).padStart(4, '0')}:${hex(c, d).padStart(4, '0')}`,
    `::ffff:0:${dotted(v4)}`,
    `64:ff9b::${dotted(v4)}`,
    `64:ff9b::${hex(a, b)}:${hex(c, d)}`,
    ...[48, 56, 64, 96].map((length) => nat64([0, 0x64, 0xff, 0x9b, 0, 1], length, v4)),
  ];
}

const byte = fc.integer({ min: 0, max: 255 });
const anyIpv4 = fc.tuple(byte, byte, byte, byte) as fc.Arbitrary<Bytes>;
const refusedIpv4 = fc.oneof(
  fc.tuple(fc.constant(0), byte, byte, byte),
  fc.tuple(fc.constant(127), byte, byte, byte),
  fc.tuple(fc.constant(169), fc.constant(254), byte, byte),
  fc.tuple(fc.integer({ min: 224, max: 239 }), byte, byte, byte),
  fc.constant([255, 255, 255, 255]),
) as fc.Arbitrary<Bytes>;

describe('address spellings', () => {
  it('refuses every spelling of a refused IPv4 address', () => {
    fc.assert(
      fc.property(refusedIpv4, (v4) => {
        expect(canonicalAddress(dotted(v4)).ok).toBe(false);
        for (const spelling of spellings(v4)) {
          const check = canonicalAddress(spelling);
          expect(check.ok, spelling).toBe(false);
        }
        // IPv4-compatible, except where ::/96 holds IPv6's own :: and ::1.
        if (v4[0] + v4[1] + v4[2] > 0 || v4[3] > 1) {
          expect(canonicalAddress(`::${dotted(v4)}`).ok).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('reads every accepted spelling as one address: IPv4-mapped is the IPv4 address', () => {
    fc.assert(
      fc.property(anyIpv4, (v4) => {
        const plain = canonicalAddress(dotted(v4));
        fc.pre(plain.ok);
        const [mapped, mappedHex, mappedLong] = spellings(v4).map(canonicalAddress);
        expect(mapped).toEqual(plain);
        expect(mappedHex).toEqual(plain);
        expect(mappedLong).toEqual(plain);
      }),
      { numRuns: 500 },
    );
  });

  it('gives one canonical text per IPv6 address, whatever its case and zeros', () => {
    fc.assert(
      fc.property(fc.ipV6(), fc.boolean(), (address, upper) => {
        const first = canonicalAddress(address);
        const again = canonicalAddress(upper ? address.toUpperCase() : address);
        expect(again).toEqual(first);
        if (first.ok) expect(canonicalAddress(first.address)).toEqual(first);
      }),
      { numRuns: 1000 },
    );
  });
});
