import { type AgentGiven, agentGivenOf } from './agent-given.ts';
import { entryName } from './entry-name.ts';
import {
  type ConnectRequest,
  type EpochMillis,
  ISTIO_API_VERSION,
  LOCALITY_LABEL,
  type StringMap,
  SYSTEM_ANNOTATION_KEYS,
  toRfc3339,
  type WorkloadEntry,
  type WorkloadEntrySpec,
  type WorkloadGroup,
} from './model.ts';
import { isGroupOnlyLabel } from './reserved-labels.ts';

/**
 * The part of a connect (`ConnectChange` in lib/registration/entry-lifecycle-store.ts) the
 * group decides.
 */
export interface BuiltEntry {
  /** The entry a first connect creates; the store ignores it when the entry exists. */
  entry: WorkloadEntry;
  autoRegistrationGroup: string;
  /** The group has a probe: the entry gets `proxy.istio.io/health-checks-enabled: "true"`. */
  healthChecksEnabled: boolean;
  /** The agent's labels and locality, kept so a template rollout lets them win again. */
  agentGiven: AgentGiven;
}

export function buildRegistration(
  group: WorkloadGroup,
  request: ConnectRequest,
  createdAt: EpochMillis,
): BuiltEntry {
  return {
    entry: buildEntry(group, request, createdAt),
    autoRegistrationGroup: group.metadata.name,
    healthChecksEnabled: group.spec.probe !== undefined,
    agentGiven: agentGivenOf(request),
  };
}

/**
 * DESIGN rule 5, after Istio's `workloadEntryFromGroup`: the group's template with this VM's
 * address, network and locality. The entry is built WITHOUT system annotations: they are
 * rendered from the record's connection state (renderWorkloadEntry), so a group can never
 * forge them and a reconnect never has to rewrite the object.
 */
export function buildEntry(
  group: WorkloadGroup,
  request: ConnectRequest,
  createdAt: EpochMillis,
): WorkloadEntry {
  const template = group.spec.template;
  const address = request.ips[0];
  if (address === undefined) throw new RangeError('a connect request carries at least one ip');
  const labels = mergeLabels(template.labels, group.spec.metadata?.labels, request.labels);
  const spec: WorkloadEntrySpec = { ...structuredClone(template), address, labels };
  const network = request.network ?? template.network;
  if (network !== undefined) spec.network = network;
  const locality = request.locality ?? template.locality;
  if (locality !== undefined) spec.locality = locality;

  return {
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadEntry',
    metadata: {
      name: entryName(group.metadata.name, address, request.network),
      namespace: request.namespace,
      labels: { ...labels },
      annotations: withoutSystemAnnotations(group.spec.metadata?.annotations),
      ownerReferences: [
        {
          apiVersion: group.apiVersion,
          kind: 'WorkloadGroup',
          name: group.metadata.name,
          uid: group.metadata.uid ?? '',
          controller: true,
        },
      ],
      creationTimestamp: toRfc3339(createdAt),
    },
    spec,
  };
}

/**
 * Later wins: template labels, then the group's `spec.metadata` labels, then the agent's.
 * The agent may not set `istio-locality`: locality comes from the locality field, and a label
 * that disagreed with it would send traffic to the wrong zone. Nor a label only the group
 * may set (isGroupOnlyLabel: Istio's and Kubernetes' domains, the canonical service's
 * sources): a connect accepts one only when it repeats the group's value, and a template
 * rollout must then let the group's new value win, not the agent's copy of the old one.
 */
export function mergeLabels(
  template: StringMap | undefined,
  groupMetadata: StringMap | undefined,
  agent: StringMap,
): StringMap {
  const fromAgent = Object.entries(agent).filter(
    ([key]) => key !== LOCALITY_LABEL && !isGroupOnlyLabel(key),
  );
  return { ...template, ...groupMetadata, ...Object.fromEntries(fromAgent) };
}

/** The group's annotations minus the keys only the controller writes. */
export function withoutSystemAnnotations(annotations: StringMap | undefined): StringMap {
  return Object.fromEntries(
    Object.entries(annotations ?? {}).filter(([key]) => !SYSTEM_ANNOTATION_KEYS.includes(key)),
  );
}
