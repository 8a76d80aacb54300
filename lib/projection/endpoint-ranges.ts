import { canonicalAddress } from '../domain/address.ts';
import { type Cidr, rangeHolding, storedCidrs } from '../domain/cidr.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { NamespaceSettings } from '../domain/namespace-settings.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import { addressBounds } from '../domain/tenant-limits.ts';

/**
 * Which addresses the projector may write into the cluster (DESIGN: trusted data decides; the
 * CVE-2021-25740 pattern): an entry whose address is a pod's or a Service's of the cluster
 * would let a tenant's Service route to another namespace's pod or to the API server, so the
 * projector never writes one, whoever registered it (agent, `apply`, an older release).
 */
export interface EndpointRanges {
  /** The cluster's pod and Service ranges: no endpoint may be in them. */
  cluster: readonly Cidr[];
  /** Per namespace, the ranges its entries must be in (its settings); absent, any. */
  namespaces: ReadonlyMap<string, readonly Cidr[]>;
}

export interface RefusedEndpoint {
  namespace: string;
  name: string;
  address: string;
  message: string;
}

export function endpointRanges(
  cluster: readonly Cidr[],
  settings: readonly NamespaceSettings[],
): EndpointRanges {
  const namespaces = new Map<string, readonly Cidr[]>();
  for (const item of settings) {
    if (item.addressRanges !== undefined) {
      namespaces.set(item.namespace, storedCidrs(item.addressRanges));
    }
  }
  return { cluster, namespaces };
}

/** A group's own ranges (its annotation). */
export interface GroupRanges {
  ref: string;
  ranges: readonly Cidr[];
}

/**
 * The ranges of the groups that set them (the `workload-registrar/address-ranges`
 * annotation), by `<namespace>/<name>`: `$connect` holds a new entry to them, and the
 * projector to the group as it is now, so narrowing a group's ranges takes out of the cluster
 * the entries registered before that are outside them.
 */
export function groupRanges(groups: readonly StoredGroup[]): Map<string, GroupRanges> {
  const byGroup = new Map<string, GroupRanges>();
  for (const { group } of groups) {
    // An annotation that does not parse (`apply` refuses one; only a table written otherwise
    // holds one) narrows nothing here: `$connect` refuses the group's new VMs and names the
    // problem, but an operator's typo must not take the group's live VMs out of the mesh.
    const bounds = addressBounds(undefined, group);
    if (bounds.group) {
      byGroup.set(`${group.metadata.namespace}/${group.metadata.name}`, bounds.group);
    }
  }
  return byGroup;
}

/**
 * The entries the projector may write, and the ones it refuses with why. The address is judged
 * in its canonical spelling (lib/domain/address.ts), so no spelling of a refused address gets
 * through. An address that is a DNS name (hand-made entries may have one) cannot be placed in
 * a range: it passes the cluster check, and is refused where its namespace has ranges.
 */
export function filterEndpoints(
  records: readonly EntryRecord[],
  ranges: EndpointRanges,
  groups: ReadonlyMap<string, GroupRanges> = new Map(),
): { allowed: EntryRecord[]; refused: RefusedEndpoint[] } {
  const allowed: EntryRecord[] = [];
  const refused: RefusedEndpoint[] = [];
  for (const record of records) {
    const { namespace, name } = record.entry.metadata;
    const address = record.entry.spec.address ?? '';
    const group =
      record.autoRegistrationGroup === undefined
        ? undefined
        : groups.get(`${namespace}/${record.autoRegistrationGroup}`);
    const problem =
      addressProblem(address, ranges.cluster, ranges.namespaces.get(namespace)) ??
      groupProblem(address, group);
    if (problem === undefined) allowed.push(record);
    else refused.push({ namespace, name, address, message: `address ${address} ${problem}` });
  }
  return { allowed, refused };
}

function addressProblem(
  text: string,
  cluster: readonly Cidr[],
  namespace: readonly Cidr[] | undefined,
): string | undefined {
  const isIpShaped = /^[0-9.]+$/.test(text) || text.includes(':');
  if (!isIpShaped || text.startsWith('unix://')) {
    return namespace === undefined
      ? undefined
      : `is not an IP address and its namespace allows only ${list(namespace)}`;
  }
  const check = canonicalAddress(text);
  if (!check.ok) return check.problem;
  const inCluster = rangeHolding(cluster, check.address);
  if (inCluster) {
    return `is in the cluster's range ${inCluster.text} (pods or Services): an entry must not stand in for them`;
  }
  if (namespace !== undefined && !rangeHolding(namespace, check.address)) {
    return `is outside its namespace's address ranges (${list(namespace)})`;
  }
  return undefined;
}

/** Outside its group's ranges (an address already judged by the cluster and namespace). */
function groupProblem(text: string, group: GroupRanges | undefined): string | undefined {
  if (group === undefined) return undefined;
  const check = canonicalAddress(text);
  if (check.ok && rangeHolding(group.ranges, check.address)) return undefined;
  return `is outside the address ranges of WorkloadGroup ${group.ref} (${list(group.ranges)})`;
}

function list(ranges: readonly Cidr[]): string {
  return ranges.map((range) => range.text).join(', ') || 'none';
}
