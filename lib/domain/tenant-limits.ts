/**
 * The limits an operator sets on what one tenant's connects may do (DESIGN: trusted data
 * decides, fair shares): the networks its entries may be in, the address ranges they must be
 * in, how many may be connected, how fast it may connect. Pure: the facts in, a refusal (with
 * what to do about it) or nothing out.
 */
import { type Cidr, parseCidrList, rangeHolding, storedCidrs } from './cidr.ts';
import { NotAllowedError, QuotaExceededError } from './errors.ts';
import { formatRef, type WorkloadGroup } from './model.ts';
import { formatNetwork, formatRate, type NamespaceSettings } from './namespace-settings.ts';

/** Group annotations the registrar reads (the group's own metadata, never copied to entries). */
export const GROUP_ANNOTATIONS = {
  /** Comma-separated CIDRs the addresses of the group's entries must be in. */
  addressRanges: 'workload-registrar/address-ranges',
} as const;

/** One party that restricts the networks a connect may name, and how to widen it. */
export interface NetworkGrant {
  /** `namespace 'shop'`, `join token abc123`, `role arn:...`. */
  who: string;
  networks: readonly string[];
  /** The command that allows another network. */
  allow: (network: string) => string;
}

/** Every grant must allow the entry's network; the first that does not is named. */
export function networkRefusal(
  network: string,
  grants: readonly NetworkGrant[],
): NotAllowedError | undefined {
  const refusing = grants.find((grant) => !grant.networks.includes(network));
  if (!refusing) return undefined;
  const allowed = refusing.networks.map(formatNetwork).join(', ') || 'none';
  const named =
    network === '' ? 'no network (an entry without spec.network)' : `network '${network}'`;
  return new NotAllowedError(
    `${named} is not allowed for ${refusing.who} (allowed: ${allowed}); connect with ?network=<one of them>, or allow it with: ${refusing.allow(network)}`,
    NotAllowedError.NETWORK,
  );
}

/** The grant of a namespace's settings, when they restrict networks. */
export function namespaceNetworkGrant(settings: NamespaceSettings | undefined): NetworkGrant[] {
  if (settings?.networks === undefined) return [];
  const { namespace, networks } = settings;
  return [
    {
      who: `namespace '${namespace}'`,
      networks,
      allow: (network) =>
        `registrar namespace set -n ${namespace} --networks ${[...networks, network].map(formatNetwork).join(',')}`,
    },
  ];
}

/** The address ranges that bound one entry: its namespace's and its group's, each if set. */
export interface AddressBounds {
  namespace?: { name: string; ranges: readonly Cidr[] };
  group?: { ref: string; ranges: readonly Cidr[] };
  /** A group annotation that does not parse: every address is refused until it is fixed. */
  groupProblem?: string;
}

export function addressBounds(
  settings: NamespaceSettings | undefined,
  group: WorkloadGroup,
): AddressBounds {
  const bounds: AddressBounds = {};
  if (settings?.addressRanges !== undefined) {
    bounds.namespace = { name: settings.namespace, ranges: storedCidrs(settings.addressRanges) };
  }
  const annotation = group.metadata.annotations?.[GROUP_ANNOTATIONS.addressRanges];
  if (annotation !== undefined) {
    const parsed = parseCidrList(annotation);
    const ref = formatRef(group.metadata);
    if (parsed.ok) bounds.group = { ref, ranges: parsed.cidrs };
    else
      bounds.groupProblem = `WorkloadGroup ${ref} annotation ${GROUP_ANNOTATIONS.addressRanges}: '${parsed.item}' ${parsed.problem}`;
  }
  return bounds;
}

/** An address outside its namespace's or its group's ranges (canonical address). */
export function addressRefusal(
  address: string,
  bounds: AddressBounds,
): NotAllowedError | undefined {
  if (bounds.groupProblem !== undefined) {
    return new NotAllowedError(
      `address ${address} cannot be checked: ${bounds.groupProblem}; fix the annotation and apply the group again`,
      NotAllowedError.ADDRESS,
    );
  }
  const { namespace, group } = bounds;
  if (namespace && !rangeHolding(namespace.ranges, address)) {
    return new NotAllowedError(
      `address ${address} is outside the address ranges allowed in namespace '${namespace.name}' (${list(namespace.ranges)}); register from an address in them, or allow it with: registrar namespace set -n ${namespace.name} --address-ranges ${[...namespace.ranges.map((r) => r.text), '<cidr>'].join(',')}`,
      NotAllowedError.ADDRESS,
    );
  }
  if (group && !rangeHolding(group.ranges, address)) {
    return new NotAllowedError(
      `address ${address} is outside the address ranges of WorkloadGroup ${group.ref} (${list(group.ranges)}, annotation ${GROUP_ANNOTATIONS.addressRanges}); register from an address in them, or change the annotation and apply the group`,
      NotAllowedError.ADDRESS,
    );
  }
  return undefined;
}

export function maxEntriesRefusal(
  settings: NamespaceSettings | undefined,
  namespace: string,
  connected: number,
  limit: number,
): QuotaExceededError {
  const which = settings?.maxEntries === undefined ? ' (the default)' : '';
  return new QuotaExceededError(
    `namespace '${namespace}' is at its quota max-entries ${limit}${which}: ${connected} entries are connected; stop VMs of this namespace, or raise it with: registrar namespace set -n ${namespace} --max-entries <n>`,
    QuotaExceededError.MAX_ENTRIES,
  );
}

export function connectRateRefusal(
  settings: NamespaceSettings | undefined,
  namespace: string,
  perSecond: number,
): QuotaExceededError {
  const which = settings?.connectRate === undefined ? ' (the default)' : '';
  return new QuotaExceededError(
    `namespace '${namespace}' is over its quota connect-rate ${formatRate(perSecond)}${which}; retry later (agents back off on their own), or raise it with: registrar namespace set -n ${namespace} --connect-rate <n>/s`,
    QuotaExceededError.CONNECT_RATE,
  );
}

function list(ranges: readonly Cidr[]): string {
  return ranges.map((range) => range.text).join(', ') || 'none';
}
