import { isIP } from 'node:net';

/**
 * Address ranges in CIDR notation (`10.0.0.0/16`, `fd00:ec2::/64`), as operators write the
 * ranges a namespace's VMs may have and the ranges of the cluster (pods, Services) that no VM
 * may claim. Pure: parsing and containment, on integers (IPv4 in 32 bits, IPv6 in 128).
 *
 * Containment is decided on the canonical address (lib/domain/address.ts): an IPv4-mapped IPv6
 * address is its IPv4 address, so `::ffff:10.0.0.1` is inside `10.0.0.0/8` and no spelling of
 * an address escapes a range written for it.
 */
export interface Cidr {
  family: 4 | 6;
  /** The first address of the range (host bits zero). */
  base: bigint;
  prefix: number;
  /** As written after normalisation: `10.0.0.0/16`. */
  text: string;
}

export type CidrParse = { ok: true; cidr: Cidr } | { ok: false; problem: string };

/** `10.0.0.0/16` or `fd00::/8`. Host bits must be zero, as Kubernetes' service ranges. */
export function parseCidr(text: string): CidrParse {
  const trimmed = text.trim();
  const slash = trimmed.indexOf('/');
  if (slash === -1) {
    return { ok: false, problem: 'must be a CIDR such as 10.0.0.0/16 or fd00::/64' };
  }
  const address = trimmed.slice(0, slash);
  const prefixText = trimmed.slice(slash + 1);
  const found = address.includes('%') ? 0 : isIP(address);
  if (found === 0) {
    return { ok: false, problem: `'${address}' is not an IPv4 or IPv6 address` };
  }
  const family = found === 4 ? 4 : 6;
  const bits = family === 4 ? 32 : 128;
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > bits) {
    return { ok: false, problem: `prefix length must be 0 to ${bits}, got '${prefixText}'` };
  }
  const value = addressValue(address, family);
  const base = value & mask(prefix, bits);
  if (base !== value) {
    return {
      ok: false,
      problem: `has host bits set; did you mean ${formatAddress(base, family)}/${prefix}?`,
    };
  }
  return {
    ok: true,
    cidr: { family, base, prefix, text: `${formatAddress(base, family)}/${prefix}` },
  };
}

/** Whether a canonical address (lib/domain/address.ts) lies inside the range. */
export function cidrContains(cidr: Cidr, address: string): boolean {
  const family = isIP(address);
  if (family !== cidr.family) return false;
  const bits = family === 4 ? 32 : 128;
  return (addressValue(address, family) & mask(cidr.prefix, bits)) === cidr.base;
}

/** The first range that holds the address, if any. */
export function rangeHolding(ranges: readonly Cidr[], address: string): Cidr | undefined {
  return ranges.find((range) => cidrContains(range, address));
}

/**
 * A comma-separated list of CIDRs, as options and annotations carry them. Empty items are
 * skipped; a bad one fails the whole list with its text and the problem.
 */
export function parseCidrList(text: string): { ok: true; cidrs: Cidr[] } | CidrProblem {
  const cidrs: Cidr[] = [];
  for (const item of text.split(',')) {
    if (item.trim() === '') continue;
    const parsed = parseCidr(item);
    if (!parsed.ok) return { ok: false, item: item.trim(), problem: parsed.problem };
    if (!cidrs.some((known) => known.text === parsed.cidr.text)) cidrs.push(parsed.cidr);
  }
  return { ok: true, cidrs };
}

export interface CidrProblem {
  ok: false;
  item: string;
  problem: string;
}

/** Parses CIDRs known to be valid (stored by the CLI after validation); drops any that is not. */
export function storedCidrs(texts: readonly string[]): Cidr[] {
  return texts.flatMap((text) => {
    const parsed = parseCidr(text);
    return parsed.ok ? [parsed.cidr] : [];
  });
}

function mask(prefix: number, bits: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return prefix === 0 ? 0n : (all >> BigInt(bits - prefix)) << BigInt(bits - prefix);
}

function addressValue(address: string, family: number): bigint {
  if (family === 4) return ipv4Value(address);
  // An embedded dotted IPv4 tail (`::ffff:10.0.0.1`, `64:ff9b::10.0.0.1`) is two groups.
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  let text = address;
  if (dotted) {
    const v4 = ipv4Value(dotted[2] ?? '');
    text = `${dotted[1]}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = [
    ...headGroups,
    ...Array<string>(tail === undefined ? 0 : missing).fill('0'),
    ...tailGroups,
  ];
  return groups.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function ipv4Value(address: string): bigint {
  return address.split('.').reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

function formatAddress(value: bigint, family: 4 | 6): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
  }
  const groups = Array.from({ length: 8 }, (_, i) =>
    ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16),
  );
  // The URL parser writes RFC 5952 text (longest zero run compressed, lower case).
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}
