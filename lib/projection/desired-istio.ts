import { type EntryRecord, renderWorkloadEntry } from '../domain/entry-record.ts';
import type { OwnerReference } from '../domain/model.ts';
import type { DesiredState } from './desired.ts';
import { clusterAnnotations, clusterLabels } from './istiod-coexistence.ts';
import { apiVersionOf, MANAGED_BY_LABEL, MANAGER } from './kinds.ts';
import type { KubeObject } from './objects.ts';

/**
 * One WorkloadEntry per registry entry: the registry's labels, annotations, spec, and the
 * Healthy condition as status, with istiod's controller annotations under the registrar's own
 * keys (istiod-coexistence.ts: with them, istiod's own cleanup deletes the entry) and two
 * labels added: managed-by, so the projector can tell its objects from others, and the
 * workload name, which istiod would otherwise have read from `istio.io/autoRegistrationGroup`.
 *
 * @param clusterGroups the WorkloadGroups that exist in the cluster, as listed there.
 */
export function desiredWorkloadEntries(
  entries: readonly EntryRecord[],
  clusterGroups: readonly KubeObject[],
): DesiredState {
  const uids = new Map<string, string>();
  for (const group of clusterGroups) {
    if (group.metadata.uid)
      uids.set(key(group.metadata.namespace, group.metadata.name), group.metadata.uid);
  }
  const objects = entries.map((record) => workloadEntryObject(record, uids));
  return { kind: 'WorkloadEntry', objects, problems: [] };
}

function workloadEntryObject(record: EntryRecord, groupUids: Map<string, string>): KubeObject {
  const rendered = renderWorkloadEntry(record);
  const { name, namespace } = rendered.metadata;
  const labels = clusterLabels(rendered.metadata.labels ?? {}, record.autoRegistrationGroup);
  const annotations = clusterAnnotations(rendered.metadata.annotations);
  const object: KubeObject = {
    apiVersion: apiVersionOf('WorkloadEntry'),
    kind: 'WorkloadEntry',
    metadata: {
      name,
      namespace,
      labels: { ...labels, [MANAGED_BY_LABEL]: MANAGER },
      // Istio's shape: no `annotations: {}` on an entry that has none (a hand-made one).
      ...(annotations ? { annotations } : {}),
    },
    spec: rendered.spec,
  };
  const owner = ownerOf(record, namespace, groupUids);
  if (owner) object.metadata.ownerReferences = [owner];
  if (rendered.status?.conditions?.length)
    object.status = { conditions: rendered.status.conditions };
  return object;
}

/**
 * istiod's ownerReference (controller: true, no blockOwnerDeletion) to the group, with the
 * group's uid IN THE CLUSTER. The registry's own uid means nothing there, and an owner uid
 * that does not exist makes Kubernetes' garbage collector delete the entry: so no group in
 * the cluster, no ownerReference.
 */
function ownerOf(
  record: EntryRecord,
  namespace: string,
  groupUids: Map<string, string>,
): OwnerReference | undefined {
  const groupName =
    record.autoRegistrationGroup ??
    record.entry.metadata.ownerReferences?.find((ref) => ref.kind === 'WorkloadGroup')?.name;
  if (groupName === undefined) return undefined;
  const uid = groupUids.get(key(namespace, groupName));
  if (uid === undefined) return undefined;
  return {
    apiVersion: apiVersionOf('WorkloadGroup'),
    kind: 'WorkloadGroup',
    name: groupName,
    uid,
    controller: true,
  };
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
