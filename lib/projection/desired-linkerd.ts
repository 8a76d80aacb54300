import { isIP } from 'node:net';
import { type EntryRecord, renderWorkloadEntry } from '../domain/entry-record.ts';
import { type Condition, type StringMap, toRfc3339 } from '../domain/model.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import type { DesiredState, Problem } from './desired.ts';
import { apiVersionOf, MANAGED_BY_LABEL, MANAGER } from './kinds.ts';
import type { KubeObject } from './objects.ts';
import { servingState } from './serving.ts';

/**
 * Group annotations that give Linkerd's meshTLS settings; the registry has no other source
 * for them. `{name}`, `{namespace}` and `{serviceAccount}` are replaced per entry, e.g.
 * `spiffe://root.linkerd.cluster.local/{namespace}/{serviceAccount}` and
 * `{name}.{namespace}.external.identity.linkerd.cluster.local`.
 */
export const LINKERD_ANNOTATIONS = {
  identity: 'workload-registrar/linkerd-identity',
  serverName: 'workload-registrar/linkerd-server-name',
} as const;

export const READY_CONDITION = 'Ready';

/** One workload.linkerd.io/v1beta1 ExternalWorkload per registry entry. */
export function desiredExternalWorkloads(
  entries: readonly EntryRecord[],
  groups: readonly StoredGroup[],
): DesiredState {
  const groupAnnotations = new Map<string, StringMap>();
  for (const { group } of groups) {
    groupAnnotations.set(
      `${group.metadata.namespace}/${group.metadata.name}`,
      group.metadata.annotations ?? {},
    );
  }
  const objects: KubeObject[] = [];
  const problems: Problem[] = [];
  for (const record of entries) {
    const built = externalWorkload(record, groupAnnotations);
    if (typeof built === 'string') {
      const { name, namespace } = record.entry.metadata;
      problems.push({ kind: 'ExternalWorkload', namespace, name, message: built });
    } else {
      objects.push(built);
    }
  }
  return { kind: 'ExternalWorkload', objects, problems };
}

/** The object, or why it cannot be built. */
function externalWorkload(
  record: EntryRecord,
  groupAnnotations: Map<string, StringMap>,
): KubeObject | string {
  const entry = renderWorkloadEntry(record);
  const { name, namespace } = entry.metadata;
  const groupName = record.autoRegistrationGroup;
  // Hand-made entries have no group: they may carry the annotations themselves.
  const source =
    groupName === undefined
      ? (entry.metadata.annotations ?? {})
      : groupAnnotations.get(`${namespace}/${groupName}`);
  const where =
    groupName === undefined
      ? `entry ${namespace}/${name}`
      : `WorkloadGroup ${namespace}/${groupName}`;
  if (source === undefined)
    return `cannot find WorkloadGroup ${namespace}/${groupName} for linkerd's meshTLS settings`;
  const missing = [LINKERD_ANNOTATIONS.identity, LINKERD_ANNOTATIONS.serverName].filter(
    (k) => !source[k],
  );
  if (missing.length > 0) {
    return `${where} has no annotation ${missing.map((k) => `'${k}'`).join(' or ')}; linkerd needs meshTLS.identity and serverName: annotate the group, e.g. ${LINKERD_ANNOTATIONS.identity}=spiffe://root.linkerd.cluster.local/{namespace}/{serviceAccount}`;
  }
  const workloadIPs = pickWorkloadIps([entry.spec.address ?? '']);
  if (workloadIPs.length === 0) {
    return `entry ${namespace}/${name} has address '${entry.spec.address ?? ''}', not an IP; linkerd's workloadIPs take IP addresses only`;
  }
  const fill = (template: string) =>
    template
      .replaceAll('{name}', name)
      .replaceAll('{namespace}', namespace)
      .replaceAll('{serviceAccount}', entry.spec.serviceAccount ?? 'default');
  return {
    apiVersion: apiVersionOf('ExternalWorkload'),
    kind: 'ExternalWorkload',
    metadata: {
      name,
      namespace,
      // Linkerd's EndpointSlice controller selects ExternalWorkloads by these labels.
      labels: {
        ...(entry.metadata.labels ?? {}),
        ...(entry.spec.labels ?? {}),
        [MANAGED_BY_LABEL]: MANAGER,
      },
    },
    spec: {
      meshTLS: {
        identity: fill(source[LINKERD_ANNOTATIONS.identity] ?? ''),
        serverName: fill(source[LINKERD_ANNOTATIONS.serverName] ?? ''),
      },
      // Protocol spelled out: the CRD defaults it to TCP, and an omitted default would read back
      // different from what was written and cause a rewrite on every run.
      ports: Object.entries(entry.spec.ports ?? {}).map(([portName, port]) => ({
        name: portName,
        port,
        protocol: 'TCP',
      })),
      workloadIPs,
    },
    status: { conditions: [readyCondition(record)] },
  };
}

/** At most one IPv4 and one IPv6 address (a workload has at most two interfaces), in order. */
export function pickWorkloadIps(addresses: readonly string[]): { ip: string }[] {
  const v4 = addresses.find((address) => isIP(address) === 4);
  const v6 = addresses.find((address) => isIP(address) === 6);
  return [v4, v6].filter((ip): ip is string => ip !== undefined).map((ip) => ({ ip }));
}

/** A workload with no Ready condition gets no traffic from Linkerd, so one is always written. */
function readyCondition(record: EntryRecord): Condition {
  const state = servingState(record);
  const condition: Condition = {
    type: READY_CONDITION,
    status: state.ready ? 'True' : 'False',
    reason: state.reason,
  };
  if (state.message) condition.message = state.message;
  if (state.since !== undefined) condition.lastTransitionTime = toRfc3339(state.since);
  return condition;
}
