import type { CatalogStore } from '../registration/catalog-store.ts';
import { listAllGroups } from '../rollout/list-groups.ts';
import type { Cluster } from './cluster.ts';
import { KindNotInstalledError } from './cluster.ts';
import { groupDifferences, groupsByRef, readClusterGroups } from './cluster-groups.ts';

/** A cluster WorkloadGroup the registry does not follow (groups come from the registry). */
export interface GroupDrift {
  group: string;
  /** `differs`: both have it, unequal; `cluster-only`: the registry has no such group. */
  kind: 'differs' | 'cluster-only';
  /** The fields that differ (`spec.template`, `metadata.labels`), or the cluster copy's problem. */
  fields: string[];
}

/**
 * In the default mode the registry's groups are the truth and the cluster's WorkloadGroups (if
 * any) are copies someone else keeps: a copy that differs (a label changed with kubectl) is
 * reported, never silently ignored. One list of the cluster's groups, and the registry's groups
 * by namespace. A cluster without the WorkloadGroup CRD has no copies to differ.
 */
export async function checkGroupDrift(
  store: Pick<
    CatalogStore,
    'listNamespaces' | 'listGroups' | 'groupSizeRefusal' | 'entrySizeRefusal'
  >,
  cluster: Pick<Cluster, 'list'>,
): Promise<GroupDrift[]> {
  let objects: Awaited<ReturnType<Cluster['list']>>;
  try {
    objects = await cluster.list('WorkloadGroup');
  } catch (error) {
    if (error instanceof KindNotInstalledError) return [];
    throw error;
  }
  const registry = groupsByRef(await listAllGroups(store));
  const read = readClusterGroups(objects, store);
  const drift: GroupDrift[] = read.problems.map((p) => ({
    group: p.group,
    kind: registry.has(p.group) ? 'differs' : 'cluster-only',
    fields: [p.message],
  }));
  for (const { group } of read.groups) {
    const key = `${group.metadata.namespace}/${group.metadata.name}`;
    const stored = registry.get(key);
    if (!stored) {
      drift.push({ group: key, kind: 'cluster-only', fields: [] });
      continue;
    }
    const fields = groupDifferences(stored.group, group);
    if (fields.length > 0) drift.push({ group: key, kind: 'differs', fields });
  }
  return drift.sort((a, b) => a.group.localeCompare(b.group));
}

/** One line per drifted group, as `registrar project` prints them. */
export function describeDrift(drift: readonly GroupDrift[]): string[] {
  return drift.map((d) =>
    d.kind === 'differs'
      ? `drift WorkloadGroup ${d.group}: the cluster's copy differs from the registry's (${d.fields.join(', ')}); the registry's is used: registrar apply the change, or run with groupSource=cluster`
      : `drift WorkloadGroup ${d.group}: in the cluster only${d.fields.length > 0 ? ` (${d.fields.join('; ')})` : ''}; VMs cannot register to it until it is registrar applied, or run with groupSource=cluster`,
  );
}
