import { isIP } from 'node:net';

/**
 * The address a VM is reached at, as the registry names and stores it (DESIGN rule 1).
 *
 * One VM must map to one entry, so each address has one spelling: IPv6 is written in its
 * canonical form (RFC 5952: lower case, zeros compressed) and an IPv4-mapped IPv6 address
 * (`::ffff:10.0.0.1`) is the IPv4 address it carries. Without that, `::ffff:10.0.0.1` and
 * `10.0.0.1` would be two entries for one VM, each holding half of its connections.
 *
 * An address no peer can reach the VM at is refused: the mesh would send traffic to itself
 * (loopback), to nobody (unspecified, broadcast), to a group (multicast) or to the instance
 * metadata service (link-local, `169.254.169.254`).
 */
export type AddressCheck = { ok: true; address: string } | { ok: false; problem: string };

export function canonicalAddress(text: string): AddressCheck {
  // A zone (`fe80::1%eth0`) is local to one host; a CIDR or port is not an address.
  const family = text.includes('%') ? 0 : isIP(text);
  if (family === 0) return { ok: false, problem: 'must be an IPv4 or IPv6 address' };
  if (family === 4) return checkIpv4(text);
  const canonical = canonicalIpv6(text);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(canonical)?.[1];
  if (mapped !== undefined) return checkIpv4(mapped);
  return checkIpv6(canonical);
}

function checkIpv4(address: string): AddressCheck {
  const [a = 0, b = 0] = address.split('.').map(Number);
  const refuse = (what: string): AddressCheck => ({
    ok: false,
    problem: `is ${what}; give an address other hosts reach this VM at`,
  });
  if (a === 0) return refuse('an unspecified ("this network") address');
  if (a === 127) return refuse('a loopback address');
  if (a === 169 && b === 254) return refuse('a link-local address');
  if (a >= 224 && a <= 239) return refuse('a multicast address');
  if (address === '255.255.255.255') return refuse('the broadcast address');
  return { ok: true, address };
}

function checkIpv6(address: string): AddressCheck {
  const refuse = (what: string): AddressCheck => ({
    ok: false,
    problem: `is ${what}; give an address other hosts reach this VM at`,
  });
  if (address === '::') return refuse('the unspecified address');
  if (address === '::1') return refuse('the loopback address');
  const first = Number.parseInt(address.split(':')[0] || '0', 16);
  // fe80::/10
  if ((first & 0xffc0) === 0xfe80) return refuse('a link-local address');
  // ff00::/8
  if ((first & 0xff00) === 0xff00) return refuse('a multicast address');
  return { ok: true, address };
}

/**
 * RFC 5952 text of an IPv6 address. The WHATWG URL parser serializes an IPv6 host exactly so
 * (lower case, leading zeros dropped, the longest run of zero groups compressed), and writes an
 * embedded IPv4 in hex, which is undone here for the mapped form only.
 */
function canonicalIpv6(address: string): string {
  const host = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (!mapped) return host;
  const high = Number.parseInt(mapped[1] ?? '0', 16);
  const low = Number.parseInt(mapped[2] ?? '0', 16);
  return `::ffff:${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}
