import type { StringMap } from './model.ts';

/**
 * Labels that Istio or Kubernetes read as topology, network or security ("Trusted data
 * decides"). An agent's own word may not set them: with an empty `spec.network`, Istio places
 * an entry in the network its `topology.istio.io/network` label names (around address
 * uniqueness, which is per network); `security.istio.io/tlsMode` decides whether peers send it
 * mTLS; `service.istio.io/canonical-name` is the identity telemetry and authorization policies
 * see; `kubernetes.io/service-name` is what an EndpointSlice belongs to.
 *
 * - Topology labels must agree with the entry as built (its network and locality: the
 *   template's, the agent's, or the instance identity document's in IAM mode). An agent that
 *   sends one that agrees keeps working (Service Mesh Manager's pilot-agent sends the network
 *   label); one that disagrees is refused, naming both values.
 * - Every other key in Istio's or Kubernetes' domains (`istio.io`, `kubernetes.io`, `k8s.io`
 *   and their subdomains, as both projects reserve them) may come only from the group, which
 *   the operator writes: an agent may repeat the group's value, never set another. Except
 *   `app.kubernetes.io/*`: Kubernetes' recommended labels for applications, which users set.
 * - The labels Istio derives the canonical service name from when the canonical-name label is
 *   absent (`app.kubernetes.io/name`, then `app`: CANONICAL_NAME_SOURCES) come only from the
 *   group too, as the canonical-name label does: otherwise an agent would choose its canonical
 *   service after all. The revision's sources (`app.kubernetes.io/version`, `version`) stay the
 *   agent's: a revision only divides the group's own canonical service (a canary VM says
 *   `version=canary`), and names no other service.
 * Nothing is added: an entry carries the labels istiod would give it, no more.
 *
 * Every lookup keyed by an agent's label key is an own-property lookup (a Map, Object.hasOwn):
 * a key such as `constructor` or `toString` must be a label like any other, never a member of
 * Object.prototype.
 */
export const RESERVED_LABEL_DOMAINS = ['istio.io', 'kubernetes.io', 'k8s.io'] as const;

/** Kubernetes' recommended application labels: for users, not read as topology or security. */
const USER_LABEL_DOMAINS = ['app.kubernetes.io'];

/**
 * Istio's canonical service name, in its order of precedence (istio/pkg/kube/labels:
 * `nameLabels`): the canonical-name label, else `app.kubernetes.io/name`, else `app`, else
 * the workload's name (the group). The first is in the reserved `istio.io` domain; the other
 * two are reserved here by name.
 */
export const CANONICAL_NAME_LABEL = 'service.istio.io/canonical-name';
export const CANONICAL_NAME_SOURCES = ['app.kubernetes.io/name', 'app'] as const;

/** Where the entry's own placement is: what its topology labels must agree with. */
export interface TrustedPlacement {
  /** The entry's `spec.network` ('' or undefined: none). */
  network: string | undefined;
  /** The entry's `spec.locality`, `region/zone/subzone`. */
  locality: string | undefined;
  /** The group's labels (template, then `spec.metadata`): the operator's. */
  groupLabels: StringMap;
}

type Trusted = (placement: TrustedPlacement) => string;

const localityPart =
  (index: number): Trusted =>
  (placement) =>
    placement.locality?.split('/')[index] ?? '';

/**
 * The topology labels and the value each must have (Istio's `label` package: network,
 * subzone, locality; Kubernetes' well-known labels, and their deprecated `failure-domain`
 * forms, which Istio still reads for locality).
 */
const TOPOLOGY = new Map<string, { trusted: Trusted; what: string }>([
  ['topology.istio.io/network', { trusted: (p) => p.network ?? '', what: 'network' }],
  ['topology.istio.io/subzone', { trusted: localityPart(2), what: 'subzone' }],
  // Label values cannot hold '/': Istio writes the locality with '.' here.
  [
    'topology.istio.io/locality',
    { trusted: (p) => (p.locality ?? '').replaceAll('/', '.'), what: 'locality' },
  ],
  ['topology.kubernetes.io/region', { trusted: localityPart(0), what: 'region' }],
  ['topology.kubernetes.io/zone', { trusted: localityPart(1), what: 'zone' }],
  ['failure-domain.beta.kubernetes.io/region', { trusted: localityPart(0), what: 'region' }],
  ['failure-domain.beta.kubernetes.io/zone', { trusted: localityPart(1), what: 'zone' }],
]);

/** Whether a label is Istio's source of the canonical service name (CANONICAL_NAME_SOURCES). */
export function isCanonicalNameSource(key: string): boolean {
  return (CANONICAL_NAME_SOURCES as readonly string[]).includes(key);
}

/** Whether a label only the group may set: a reserved domain's key or a canonical-name source. */
export function isGroupOnlyLabel(key: string): boolean {
  return !TOPOLOGY.has(key) && (isReservedLabelKey(key) || isCanonicalNameSource(key));
}

/** Whether a label key is in a domain Istio or Kubernetes reserve. */
export function isReservedLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash === -1) return false;
  const prefix = key.slice(0, slash);
  if (USER_LABEL_DOMAINS.includes(prefix)) return false;
  return RESERVED_LABEL_DOMAINS.some(
    (domain) => prefix === domain || prefix.endsWith(`.${domain}`),
  );
}

/**
 * Each agent label that the trusted data contradicts, as a message naming the label and both
 * values; empty when every reserved label agrees.
 */
export function reservedLabelProblems(agent: StringMap, placement: TrustedPlacement): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(agent)) {
    const topology = TOPOLOGY.get(key);
    if (topology) {
      const trusted = topology.trusted(placement);
      if (value !== trusted) {
        problems.push(
          `label '${key}' is '${value}' but the entry's ${topology.what} is ${trusted === '' ? 'unset' : `'${trusted}'`}: a topology label must agree with the entry's placement; drop the label or send the same ${topology.what}`,
        );
      }
      continue;
    }
    if (!isGroupOnlyLabel(key)) continue;
    const fromGroup = Object.hasOwn(placement.groupLabels, key)
      ? placement.groupLabels[key]
      : undefined;
    if (value === fromGroup) continue;
    const why = isCanonicalNameSource(key)
      ? `Istio derives the canonical service from it (${CANONICAL_NAME_LABEL}, else ${CANONICAL_NAME_SOURCES.join(', else ')}), which comes only from the group, as ${CANONICAL_NAME_LABEL} does`
      : `labels in the ${RESERVED_LABEL_DOMAINS.join(', ')} domains come only from the group's template, which the operator writes`;
    problems.push(
      `label '${key}' is '${value}' but the WorkloadGroup ${fromGroup === undefined ? 'does not set it' : `sets '${fromGroup}'`}: ${why}; drop the label, or set it in the group`,
    );
  }
  return problems;
}
