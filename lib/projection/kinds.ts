/**
 * The Kubernetes kinds the projector reads and writes, with the coordinates of their REST
 * paths (`/apis/<group>/<version>/namespaces/<ns>/<plural>`). One table, so the adapter, the
 * stand-in API server, the RBAC manifests in docs/kubernetes.md and the tests agree.
 */

/** Kinds the projector writes: every object of these kinds it manages carries MANAGED_BY. */
export type ManagedKind = 'WorkloadEntry' | 'ExternalWorkload' | 'EndpointSlice';

/** Kinds it only reads: Services (EndpointSlice targets) and WorkloadGroups (ownerReferences). */
export type ReadOnlyKind = 'Service' | 'WorkloadGroup';

export type Kind = ManagedKind | ReadOnlyKind;

export interface KindInfo {
  kind: Kind;
  /** Empty for the core group (`/api/v1`). */
  group: string;
  version: string;
  plural: string;
  /**
   * Whether status is a subresource: writes to the object ignore `status`, and status is
   * written with PUT .../status. Istio's WorkloadEntry CRD declares it; Linkerd's
   * ExternalWorkload CRD does not, so its status travels with the object.
   */
  statusSubresource: boolean;
}

export const KINDS: Readonly<Record<Kind, KindInfo>> = {
  WorkloadEntry: {
    kind: 'WorkloadEntry',
    group: 'networking.istio.io',
    version: 'v1',
    plural: 'workloadentries',
    statusSubresource: true,
  },
  WorkloadGroup: {
    kind: 'WorkloadGroup',
    group: 'networking.istio.io',
    version: 'v1',
    plural: 'workloadgroups',
    statusSubresource: true,
  },
  ExternalWorkload: {
    kind: 'ExternalWorkload',
    group: 'workload.linkerd.io',
    version: 'v1beta1',
    plural: 'externalworkloads',
    statusSubresource: false,
  },
  EndpointSlice: {
    kind: 'EndpointSlice',
    group: 'discovery.k8s.io',
    version: 'v1',
    plural: 'endpointslices',
    statusSubresource: false,
  },
  Service: {
    kind: 'Service',
    group: '',
    version: 'v1',
    plural: 'services',
    statusSubresource: true,
  },
};

export function apiVersionOf(kind: Kind): string {
  const info = KINDS[kind];
  return info.group === '' ? info.version : `${info.group}/${info.version}`;
}

/** `app.kubernetes.io/managed-by`: the projector never touches an object without it. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGER = 'workload-registrar';
/** The label selector that lists exactly the objects this projector manages. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGER}`;

/** EndpointSlice labels, as the Kubernetes EndpointSlice controller sets them. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const SLICE_MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
/**
 * Our value for `endpointslice.kubernetes.io/managed-by`. It must differ from the built-in
 * controller's (`endpointslice-controller.k8s.io`): each controller only touches slices
 * carrying its own value, so ours and the Pod slices of the same Service coexist.
 */
export const SLICE_MANAGER = 'workload-registrar.mesh';
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';

export function isManaged(object: { metadata: { labels?: Record<string, string> } }): boolean {
  return object.metadata.labels?.[MANAGED_BY_LABEL] === MANAGER;
}
