import { isIP } from 'node:net';

/**
 * IP addresses as bytes and in one spelling each. Pure; the rules about which addresses a VM
 * may be registered at are in address.ts, and CIDR checks (of the projector, of a namespace's
 * allowed ranges) compare the bytes this returns.
 *
 * Spellings that reach the same IPv4 host are read as that host:
 * - IPv4-mapped `::ffff:a.b.c.d` (also written `::ffff:a9fe:a9fe`) IS the IPv4 address: a
 *   dual-stack socket dials the IPv4 host (RFC 4291 2.5.5.2), so it is parsed as IPv4;
 * - the others stay IPv6 but carry an IPv4 address that `embeddedIpv4` extracts:
 *   IPv4-compatible `::a.b.c.d` (deprecated, RFC 4291 2.5.5.1), IPv4-translated
 *   `::ffff:0:a.b.c.d` (SIIT, RFC 2765), and NAT64 (RFC 6052) under the well-known prefix
 *   `64:ff9b::/96` or the local-use `64:ff9b:1::/48` (RFC 8215), where a NAT64 gateway
 *   forwards to the IPv4 host.
 * Only dotted-decimal IPv4 without leading zeros is an address (node's isIP): the inet_aton
 * forms `0xa9fea9fe`, `2852039166`, `0251.0376.0251.0376` or `169.254.43518` are not, so they
 * never reach a resolver that would read them as 169.254.169.254.
 */
export interface IpAddress {
  family: 4 | 6;
  /** Dotted decimal, or RFC 5952 (lower case, leading zeros dropped, longest zero run `::`). */
  text: string;
  /** 4 or 16 bytes, network order. */
  bytes: readonly number[];
}

/** How an IPv6 address carries an IPv4 one. */
export type Embedding = 'IPv4-compatible' | 'IPv4-translated' | 'NAT64';

export interface EmbeddedIpv4 {
  how: Embedding;
  ipv4: IpAddress;
}

/** The address, canonical; undefined for anything else (a CIDR, a port, a zone, a name). */
export function parseIpAddress(text: string): IpAddress | undefined {
  // A zone (`fe80::1%eth0`) is local to one host; a CIDR or port is not an address.
  const family = text.includes('%') ? 0 : isIP(text);
  if (family === 4) return ipv4(text.split('.').map(Number));
  if (family !== 6) return undefined;
  const bytes = ipv6Bytes(text);
  if (isPrefix(bytes, MAPPED)) return ipv4(bytes.slice(12));
  return { family: 6, text: ipv6Text(text), bytes };
}

/** The IPv4 address an IPv6 address reaches through a translator or a tunnel, if any. */
export function embeddedIpv4(address: IpAddress): EmbeddedIpv4[] {
  if (address.family === 4) return [];
  const { bytes } = address;
  const found: EmbeddedIpv4[] = [];
  // `::` and `::1` are in ::/96 but are IPv6's own unspecified and loopback addresses.
  const own = bytes.slice(12, 15).every((byte) => byte === 0) && (bytes[15] ?? 0) <= 1;
  if (isPrefix(bytes, COMPATIBLE) && !own) {
    found.push({ how: 'IPv4-compatible', ipv4: ipv4(bytes.slice(12)) });
  }
  if (isPrefix(bytes, TRANSLATED))
    found.push({ how: 'IPv4-translated', ipv4: ipv4(bytes.slice(12)) });
  if (isPrefix(bytes, NAT64_WELL_KNOWN)) found.push({ how: 'NAT64', ipv4: ipv4(bytes.slice(12)) });
  if (isPrefix(bytes, NAT64_LOCAL_USE)) {
    // The translator's prefix length inside the /48 is its operator's choice, unknown here:
    // every length the address is well-formed for counts, so a refused reading is refused.
    for (const length of [48, 56, 64, 96]) {
      const carried = rfc6052Ipv4(bytes, length);
      if (carried) found.push({ how: 'NAT64', ipv4: ipv4(carried) });
    }
  }
  return found;
}

/** A prefix as the bytes an address must start with. */
interface Prefix {
  bytes: readonly number[];
}

const zeros = (n: number) => Array.from({ length: n }, () => 0);
const MAPPED: Prefix = { bytes: [...zeros(10), 0xff, 0xff] };
const COMPATIBLE: Prefix = { bytes: zeros(12) };
const TRANSLATED: Prefix = { bytes: [...zeros(8), 0xff, 0xff, 0, 0] };
const NAT64_WELL_KNOWN: Prefix = { bytes: [0, 0x64, 0xff, 0x9b, ...zeros(8)] };
const NAT64_LOCAL_USE: Prefix = { bytes: [0, 0x64, 0xff, 0x9b, 0, 1] };

function isPrefix(bytes: readonly number[], prefix: Prefix): boolean {
  return prefix.bytes.every((byte, i) => bytes[i] === byte);
}

/**
 * RFC 6052 2.2: the IPv4 address follows a prefix of `length` bits, skipping bits 64-71 (the
 * "u" octet, byte 8, always zero), and the suffix after it is zero; so under a /48 it is in
 * bytes 6, 7, 9 and 10. Undefined when the address is not well-formed for that length.
 */
function rfc6052Ipv4(bytes: readonly number[], length: number): number[] | undefined {
  const positions: number[] = [];
  for (let i = length / 8; positions.length < 4; i++) if (i !== 8) positions.push(i);
  const last = positions[3] ?? 15;
  // A /96 prefix covers byte 8: a translator may be configured with any, so it is not checked.
  const uOctet = length < 96 ? bytes[8] : 0;
  if (uOctet !== 0 || bytes.slice(last + 1).some((byte) => byte !== 0)) return undefined;
  return positions.map((i) => bytes[i] ?? 0);
}

function ipv4(bytes: readonly number[]): IpAddress {
  return { family: 4, text: bytes.join('.'), bytes: [...bytes] };
}

/**
 * RFC 5952 text of an IPv6 address. The WHATWG URL parser serializes an IPv6 host exactly so
 * (lower case, leading zeros dropped, the longest run of zero groups compressed).
 */
function ipv6Text(address: string): string {
  return new URL(`http://[${address}]/`).hostname.slice(1, -1);
}

/** The 16 bytes of a valid IPv6 address (isIP checked it), embedded dotted quad included. */
function ipv6Bytes(address: string): number[] {
  const [head = '', tail] = ipv6Text(address).split('::');
  const groups = (part: string | undefined) =>
    part === undefined || part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16));
  const left = groups(head);
  const right = groups(tail);
  const all =
    tail === undefined ? left : [...left, ...zeros(8 - left.length - right.length), ...right];
  return all.flatMap((group) => [group >> 8, group & 0xff]);
}
