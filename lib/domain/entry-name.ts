import { createHash } from 'node:crypto';
import { DNS1123_SUBDOMAIN_MAX } from './validation.ts';

// 10 hex characters = 40 bits: a collision between two long names needs ~1M of them at once.
const HASH_LENGTH = 10;

/**
 * The name of an auto-registered WorkloadEntry, as Istio's controller names it:
 * `<group>-<first IP with ':' replaced by '-'>[-<network>]`, made a valid DNS-1123 subdomain.
 * The same VM (group, first IP, network) always gets the same name, which is what makes a
 * reconnect find its entry again.
 */
export function entryName(group: string, firstIp: string, network?: string): string {
  const raw = [group, firstIp.replaceAll(':', '-'), network].filter(Boolean).join('-');
  const name = toDns1123Subdomain(raw);
  if (name.length <= DNS1123_SUBDOMAIN_MAX) return name || `entry-${shortHash(raw)}`;
  return shorten(name);
}

/**
 * Over 253 characters: keep the tail (the IP and network, which tell VMs of one group apart)
 * and append a hash of the whole name, so two long names that share a tail never collide.
 */
function shorten(name: string): string {
  const suffix = `-${shortHash(name)}`;
  const tail = name.slice(name.length - (DNS1123_SUBDOMAIN_MAX - suffix.length));
  // The cut may land on a '-' or '.', and a subdomain must start with an alphanumeric.
  return tail.replace(/^[^a-z0-9]+/, '') + suffix;
}

/** Lower case, only `[a-z0-9.-]`, every dot-separated part alphanumeric at both ends. */
function toDns1123Subdomain(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .split('.')
    .map((part) => part.replace(/^-+|-+$/g, ''))
    .filter((part) => part.length > 0)
    .join('.');
}

function shortHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, HASH_LENGTH);
}

/**
 * What an auto-registered entry's name was made from. The name is not injective (`a_b`, `a-b`
 * and `A-B` all become `a-b`; group `api-10.0.0.1` with ip `10.0.0.2` spells the same name as
 * group `api` with ip `10.0.0.1` and network `10.0.0.2`), so the entry records its origin and a
 * connect whose origin differs is a collision (rule 4), never a reconnect of another VM's entry.
 */
export function entryOrigin(group: string, firstIp: string, network?: string): string {
  return JSON.stringify([group, firstIp, network ?? '']);
}
