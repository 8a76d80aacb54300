import type { StringMap } from '../domain/model.ts';
import { CANONICAL_NAME_LABEL, CANONICAL_NAME_SOURCES } from '../domain/reserved-labels.ts';
import type { SidecarBootstrap } from '../protocol/sidecar-message.ts';
import type { MeshSettings } from './mesh-settings.ts';

/** What a VM's sidecar bootstrap is made of: its entry, as the registry holds it. */
export interface BootstrapSource {
  namespace: string;
  /** The WorkloadGroup that auto-registered the entry: the workload's name. */
  group: string;
  serviceAccount: string;
  /** The entry's labels (template, group metadata, agent). */
  labels: StringMap;
  /**
   * The group's own labels (template, then `spec.metadata`): the only source of the canonical
   * service name (an agent's labels never choose it: lib/domain/reserved-labels.ts).
   */
  groupLabels: StringMap;
  /** The entry's ports, from the group's template. */
  ports: Record<string, number>;
  network: string | undefined;
}

/**
 * Ports istio-proxy's iptables setup must leave alone on a VM: 22 (ssh: a broken sidecar must
 * not lock the operator out), 15090 (Prometheus), 15021 (health), 15020 (the agent's status
 * port). The same list Istio's `istioctl x workload entry configure` writes.
 */
const LOCAL_EXCLUDE_PORTS = '22,15090,15021,15020';

/**
 * The sidecar bootstrap of one entry, as Istio's VM onboarding (`istioctl x workload entry
 * configure`) would make it from the entry's WorkloadGroup, with two differences because the
 * registrar, not istiod, owns the entry:
 * - no `ISTIO_META_AUTO_REGISTER_GROUP`: istiod must not auto-register the proxy a second time;
 * - no `readinessProbe`: the registrar agent probes and reports health; istio-agent reporting
 *   it to istiod as well would give the entry two writers of its `Healthy` condition.
 * Pure: the same entry and settings always give the same files.
 */
export function buildBootstrap(
  source: BootstrapSource,
  settings: MeshSettings,
  rootCert: string,
): SidecarBootstrap {
  // The name from the group alone: an entry an older release registered may still carry an
  // `app` its agent chose. The revision from the entry: the agent may label its own revision.
  const canonical = {
    name: canonicalService(source.groupLabels, source.group).name,
    revision: canonicalService(source.labels, source.group).revision,
  };
  const labels = sortedObject({
    ...source.labels,
    'service.istio.io/canonical-name': canonical.name,
    'service.istio.io/canonical-revision': canonical.revision,
  });
  const proxyMetadata: StringMap = {
    CANONICAL_SERVICE: canonical.name,
    CANONICAL_REVISION: canonical.revision,
    POD_NAMESPACE: source.namespace,
    SERVICE_ACCOUNT: source.serviceAccount,
    TRUST_DOMAIN: settings.trustDomain,
    ISTIO_META_CLUSTER_ID: settings.clusterId,
    ISTIO_META_NETWORK: source.network ?? '',
    ISTIO_META_WORKLOAD_NAME: source.group,
    ISTIO_METAJSON_LABELS: JSON.stringify(labels),
    ISTIO_META_DNS_CAPTURE: 'true',
  };
  if (settings.meshId !== undefined) proxyMetadata.ISTIO_META_MESH_ID = settings.meshId;
  const ports = Object.entries(source.ports).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (ports.length > 0) {
    proxyMetadata.ISTIO_META_POD_PORTS = JSON.stringify(
      ports.map(([name, containerPort]) => ({ name, containerPort })),
    );
  }
  const inbound = [...new Set(ports.map(([, port]) => port))].sort((a, b) => a - b);
  // cluster.env is the proxy metadata plus what istio-start.sh reads for iptables and identity.
  const clusterEnv = sortedObject({
    ...proxyMetadata,
    ISTIO_INBOUND_PORTS: inbound.length > 0 ? inbound.join(',') : '*',
    ISTIO_NAMESPACE: source.namespace,
    ISTIO_SERVICE: `${source.group}.${source.namespace}`,
    ISTIO_SERVICE_CIDR: '*',
    ISTIO_LOCAL_EXCLUDE_PORTS: LOCAL_EXCLUDE_PORTS,
  });
  const defaultConfig: SidecarBootstrap['meshConfig']['defaultConfig'] = {
    discoveryAddress: settings.discoveryAddress,
    proxyMetadata: sortedObject(proxyMetadata),
  };
  if (settings.meshId !== undefined) defaultConfig.meshId = settings.meshId;
  const discoveryHost = settings.discoveryAddress.replace(/:\d+$/, '');
  return {
    clusterEnv,
    meshConfig: { defaultConfig },
    rootCert,
    hosts:
      settings.istiodAddress === undefined
        ? []
        : [{ address: settings.istiodAddress, hostnames: [discoveryHost] }],
  };
}

/**
 * The canonical service and revision, as Istio derives them for a workload's labels
 * (istio/pkg/kube/labels `CanonicalService`): the first label present of the canonical-name
 * label, `app.kubernetes.io/name`, `app`, else the workload's name; of the canonical-revision
 * label, `app.kubernetes.io/version`, `version`, else `latest`. Present means an own key, as
 * Go's map lookup: an empty value counts.
 */
export function canonicalService(
  labels: StringMap,
  workload: string,
): { name: string; revision: string } {
  return {
    name: firstPresent(labels, [CANONICAL_NAME_LABEL, ...CANONICAL_NAME_SOURCES]) ?? workload,
    revision: firstPresent(labels, CANONICAL_REVISION_SOURCES) ?? 'latest',
  };
}

const CANONICAL_REVISION_SOURCES = [
  'service.istio.io/canonical-revision',
  'app.kubernetes.io/version',
  'version',
];

function firstPresent(labels: StringMap, keys: readonly string[]): string | undefined {
  const key = keys.find((candidate) => Object.hasOwn(labels, candidate));
  return key === undefined ? undefined : labels[key];
}

/** Keys in order, so the same entry always renders byte for byte the same files. */
function sortedObject(map: StringMap): StringMap {
  return Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
