import { formatRef, type ObjectRef } from '../domain/model.ts';

/**
 * Where WorkloadGroups come from. `registry` (the default): operators `registrar apply` them.
 * `cluster` (opt in): the projector's group sync keeps the registry's groups equal to the
 * WorkloadGroups in the Kubernetes cluster (all of them, or those a label selector picks), so
 * they live in one place: Git, applied to the cluster by Argo CD, Flux or kubectl.
 */
export type GroupSource = { kind: 'registry' } | { kind: 'cluster'; selector?: string };

export const GROUP_SOURCES = ['registry', 'cluster'] as const;

export function sameGroupSource(a: GroupSource, b: GroupSource): boolean {
  if (a.kind !== b.kind) return false;
  return a.kind === 'registry' || a.selector === (b as { selector?: string }).selector;
}

export function describeGroupSource(source: GroupSource): string {
  if (source.kind === 'registry') return 'the registry (registrar apply)';
  const which = source.selector ? ` labelled ${source.selector}` : '';
  return `the Kubernetes cluster (its WorkloadGroups${which}; groupSource=cluster)`;
}

/**
 * The refusal of `registrar apply` or `delete` of a group while groups come from the cluster:
 * a change here would be undone by the next sync, so the operator is told where to make it.
 */
export function groupsComeFromClusterMessage(
  verb: 'apply' | 'delete',
  group: ObjectRef,
  source: GroupSource & { kind: 'cluster' },
): string {
  const how =
    verb === 'apply'
      ? 'apply it to the cluster (kubectl apply -f FILE, or commit it where Argo CD or Flux applies from)'
      : `delete it from the cluster (kubectl delete workloadgroup ${group.name} -n ${group.namespace})`;
  const selector = source.selector ? ` labelled ${source.selector}` : '';
  return `workloadgroup ${formatRef(group)}: groups come from the Kubernetes cluster (the registrar syncs its WorkloadGroups${selector}); ${how}: the registrar follows`;
}
