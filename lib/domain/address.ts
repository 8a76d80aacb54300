import { embeddedIpv4, type IpAddress, parseIpAddress } from './ip-address.ts';

export {
  type EmbeddedIpv4,
  type Embedding,
  embeddedIpv4,
  type IpAddress,
  parseIpAddress,
} from './ip-address.ts';

/**
 * The address a VM is reached at, as the registry names and stores it (DESIGN rule 1).
 *
 * One VM must map to one entry, so each address has one spelling: IPv6 is written in its
 * canonical form (RFC 5952: lower case, zeros compressed) and an IPv4-mapped IPv6 address
 * (`::ffff:10.0.0.1`) is the IPv4 address it carries. Without that, `::ffff:10.0.0.1` and
 * `10.0.0.1` would be two entries for one VM, each holding half of its connections.
 *
 * An address no peer can reach the VM at is refused: the mesh would send traffic to itself
 * (loopback), to nobody (unspecified, broadcast), to a group (multicast) or to a service of
 * the host it runs on: the instance metadata service (`169.254.169.254`, on Nitro also
 * `fd00:ec2::254`), Amazon's DNS and time servers. The rules hold after canonicalisation,
 * whatever the spelling: an IPv6 address that carries an IPv4 one (IPv4-compatible,
 * IPv4-translated, NAT64: ip-address.ts) is refused when the IPv4 address would be, so
 * `64:ff9b::a9fe:a9fe` is the metadata service as much as `169.254.169.254` is.
 */
export type AddressCheck = { ok: true; address: string } | { ok: false; problem: string };

const REACHABLE = 'give an address other hosts reach this VM at';

export function canonicalAddress(text: string): AddressCheck {
  const address = parseIpAddress(text);
  if (!address) return { ok: false, problem: 'must be an IPv4 or IPv6 address' };
  const problem = addressProblem(address);
  return problem === undefined ? { ok: true, address: address.text } : { ok: false, problem };
}

/**
 * Why no VM can be registered at this (canonical) address, with what to do; undefined when
 * one can. Also what another check (the projector's) asks of an address it reads from
 * elsewhere: parse it with parseIpAddress first.
 */
export function addressProblem(address: IpAddress): string | undefined {
  const own = address.family === 4 ? ipv4Problem(address.bytes) : ipv6Problem(address.bytes);
  if (own !== undefined) return `is ${own}; ${REACHABLE}`;
  for (const { how, ipv4 } of embeddedIpv4(address)) {
    const carried = ipv4Problem(ipv4.bytes);
    if (carried !== undefined)
      return `is the ${how} form of ${ipv4.text}, ${carried}; ${REACHABLE}`;
    // Deprecated (RFC 4291 2.5.5.1): nothing routes it today; the VM has the IPv4 address.
    if (how === 'IPv4-compatible') {
      return `is an IPv4-compatible IPv6 address (deprecated by RFC 4291, routed by nothing); give the IPv4 address ${ipv4.text} itself`;
    }
  }
  return undefined;
}

function ipv4Problem(bytes: readonly number[]): string | undefined {
  const [a = 0, b = 0, c = 0, d = 0] = bytes;
  if (a === 0) return 'an unspecified ("this network") address';
  if (a === 127) return 'a loopback address';
  if (a === 169 && b === 254) {
    const service = c === 169 ? HOST_SERVICES[String(d)] : undefined;
    return `a link-local address${service ? ` (${service})` : ''}`;
  }
  if (a >= 224 && a <= 239) return 'a multicast address';
  if (a === 255 && b === 255 && c === 255 && d === 255) return 'the broadcast address';
  return undefined;
}

/**
 * What EC2 serves each instance at 169.254.169.<n> and, on Nitro, at fd00:ec2::<n> (EC2 User
 * Guide; "IPv6 on AWS", Supporting Amazon VPC services).
 */
const HOST_SERVICES: Record<string, string> = {
  '254': 'the instance metadata service',
  '253': "Amazon's DNS resolver",
  '123': "Amazon's time server",
};

function ipv6Problem(bytes: readonly number[]): string | undefined {
  const [first = 0, second = 0] = bytes;
  if (bytes.every((byte) => byte === 0)) return 'the unspecified address';
  if (bytes.slice(0, 15).every((byte) => byte === 0) && bytes[15] === 1) {
    return 'the loopback address';
  }
  // fe80::/10
  if (first === 0xfe && (second & 0xc0) === 0x80) return 'a link-local address';
  // ff00::/8
  if (first === 0xff) return 'a multicast address';
  if (isEc2ServicePrefix(bytes)) {
    const last = (((bytes[14] ?? 0) << 8) | (bytes[15] ?? 0)).toString(16);
    const service = HOST_SERVICES[last] ?? 'host services';
    return `in fd00:ec2::/64, where EC2 serves each instance ${service} (the IPv6 form of 169.254.169.x)`;
  }
  return undefined;
}

/**
 * fd00:ec2::/64: the unique local prefix of the instance metadata service (fd00:ec2::254),
 * Amazon's DNS resolver (::253) and time server (::123) on Nitro instances. No VPC numbers a
 * VM there.
 */
function isEc2ServicePrefix(bytes: readonly number[]): boolean {
  const prefix = [0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0];
  return prefix.every((byte, i) => bytes[i] === byte);
}
