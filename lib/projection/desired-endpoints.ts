import { isIP } from 'node:net';
import { type EntryRecord, MAINTENANCE_REASON } from '../domain/entry-record.ts';
import type { StringMap } from '../domain/model.ts';
import type { AddressType, Endpoint, EndpointPort, ServiceObject } from './objects.ts';
import { servingState } from './serving.ts';

/** Endpoints that share an address family and a port set: they may share slices. */
export interface EndpointGroup {
  addressType: AddressType;
  ports: EndpointPort[];
  /** `addressType` + the ports sorted by name: the controller's port-map key. */
  key: string;
  /** Sorted by entry name, so packing is deterministic. */
  endpoints: Endpoint[];
}

/**
 * Services the EndpointSlice projection serves: a selector (a Service without one has its
 * endpoints managed by someone else) and not ExternalName (a DNS alias, no endpoints). An
 * empty selector is treated as none: it would put every VM of the namespace behind it.
 */
export function selectsEntries(service: ServiceObject): boolean {
  if (service.spec.type === 'ExternalName') return false;
  return Object.keys(service.spec.selector ?? {}).length > 0;
}

/** The labels Services select on: the entry's spec labels over its metadata labels. */
export function entryLabels(record: EntryRecord): StringMap {
  return { ...(record.entry.metadata.labels ?? {}), ...(record.entry.spec.labels ?? {}) };
}

/** Own labels only: a selector key such as `constructor` matches a label, never a prototype member. */
export function matchesSelector(selector: StringMap, labels: StringMap): boolean {
  return Object.entries(selector).every(
    ([key, value]) => Object.hasOwn(labels, key) && labels[key] === value,
  );
}

/**
 * The endpoints a Service should have, grouped as the EndpointSlice controller groups them:
 * by address family and port set. Unready entries are included with `ready: false`.
 */
export function desiredEndpointGroups(
  service: ServiceObject,
  entries: readonly EntryRecord[],
): EndpointGroup[] {
  if (!selectsEntries(service)) return [];
  const selector = service.spec.selector ?? {};
  const families = addressTypesOf(service);
  const groups = new Map<string, EndpointGroup>();
  const sorted = [...entries].sort((a, b) => compare(a.entry.metadata.name, b.entry.metadata.name));
  for (const record of sorted) {
    const { namespace, name } = record.entry.metadata;
    if (namespace !== service.metadata.namespace) continue;
    if (!matchesSelector(selector, entryLabels(record))) continue;
    const address = record.entry.spec.address ?? '';
    const family = isIP(address);
    // Hostname addresses cannot go into an IP slice; the controller only publishes IPs.
    if (family === 0) continue;
    const addressType: AddressType = family === 4 ? 'IPv4' : 'IPv6';
    if (!families.has(addressType)) continue;
    const ports = endpointPorts(service, record.entry.spec.ports ?? {});
    const key = portMapKey(addressType, ports);
    let group = groups.get(key);
    if (!group) {
      group = { addressType, ports, key, endpoints: [] };
      groups.set(key, group);
    }
    const state = servingState(record);
    // publishNotReadyAddresses: the Service wants unready endpoints to receive traffic; never
    // one an operator cordoned (servingState's Maintenance).
    const ready =
      state.ready ||
      (service.spec.publishNotReadyAddresses === true && state.reason !== MAINTENANCE_REASON);
    const endpoint: Endpoint = {
      addresses: [address],
      conditions: { ready, serving: state.ready, terminating: false },
      targetRef: { apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry', namespace, name },
    };
    const zone = record.entry.spec.locality?.split('/')[1];
    if (zone) endpoint.zone = zone;
    group.endpoints.push(endpoint);
  }
  return [...groups.values()].sort((a, b) => compare(a.key, b.key));
}

/**
 * Ports of one entry for the Service. A WorkloadEntry's `ports` map is keyed by service port
 * name (Istio's reading); otherwise a named targetPort is looked up in the same map and a
 * numeric one is used as is. A port that cannot be resolved is left out for this entry, as
 * the controller does for a Pod without the named container port.
 */
export function endpointPorts(
  service: ServiceObject,
  entryPorts: Record<string, number>,
): EndpointPort[] {
  const ports: EndpointPort[] = [];
  for (const servicePort of service.spec.ports ?? []) {
    const name = servicePort.name ?? '';
    let port: number | undefined;
    // Own ports only: a Service port named `constructor` (a valid DNS label) is not a member
    // of Object.prototype.
    if (name !== '' && Object.hasOwn(entryPorts, name)) port = entryPorts[name];
    else if (typeof servicePort.targetPort === 'string') {
      port = Object.hasOwn(entryPorts, servicePort.targetPort)
        ? entryPorts[servicePort.targetPort]
        : undefined;
    } else port = servicePort.targetPort || servicePort.port;
    if (port === undefined) continue;
    const endpointPort: EndpointPort = { name, port, protocol: servicePort.protocol ?? 'TCP' };
    if (servicePort.appProtocol !== undefined) endpointPort.appProtocol = servicePort.appProtocol;
    ports.push(endpointPort);
  }
  return ports;
}

export function portMapKey(addressType: string, ports: readonly EndpointPort[]): string {
  const sorted = [...ports].sort((a, b) => compare(a.name, b.name) || a.port - b.port);
  return `${addressType}:${JSON.stringify(sorted.map((p) => [p.name, p.port, p.protocol, p.appProtocol ?? '']))}`;
}

/**
 * The address families a Service's slices carry, as the controller decides: its ipFamilies;
 * else the family of its clusterIP; else (headless without families) both.
 */
export function addressTypesOf(service: ServiceObject): Set<AddressType> {
  const families = new Set<AddressType>();
  for (const family of service.spec.ipFamilies ?? []) {
    if (family === 'IPv4' || family === 'IPv6') families.add(family);
  }
  if (families.size > 0) return families;
  const clusterIp = service.spec.clusterIP;
  if (clusterIp && clusterIp !== 'None' && isIP(clusterIp) !== 0) {
    families.add(isIP(clusterIp) === 6 ? 'IPv6' : 'IPv4');
    return families;
  }
  return new Set<AddressType>(['IPv4', 'IPv6']);
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
