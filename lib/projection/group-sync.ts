import { type EpochMillis, formatRef, toRfc3339, type WorkloadGroup } from '../domain/model.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';
import { listAllGroups } from '../rollout/list-groups.ts';
import type { RolloutStore } from '../rollout/rollout-store.ts';
import type { Cluster } from './cluster.ts';
import { groupDifferences, groupsByRef, readClusterGroups } from './cluster-groups.ts';
import type { KubeObject } from './objects.ts';

/** How long an empty cluster listing holds the removal of the registry's groups. */
export const EMPTY_LISTING_HOLD_MS = 10 * 60_000;

export interface GroupSyncDeps {
  cluster: Pick<Cluster, 'list'>;
  registry: Pick<
    CatalogStore,
    'listNamespaces' | 'listGroups' | 'applyGroup' | 'groupSizeRefusal' | 'entrySizeRefusal'
  >;
  rollouts: Pick<RolloutStore, 'listRollouts' | 'requestRemoval'>;
}

export interface GroupSyncOptions {
  /** Only the cluster's WorkloadGroups with these labels (a Kubernetes label selector). */
  selector?: string;
  /** Read both sides and report, write nothing. */
  dryRun?: boolean;
  now: EpochMillis;
}

/** What one sync did (or, in a dry run, would do). */
export interface GroupSyncReport {
  dryRun: boolean;
  created: string[];
  updated: string[];
  /** Deleted in the cluster: their removal is asked of the rollout function. */
  removing: string[];
  /** Back in the cluster before the removal ran: the removal is withdrawn. */
  kept: string[];
  unchanged: number;
  /** Cluster groups the registry cannot take (kept as the registry has them), and holds. */
  problems: { group: string; message: string }[];
}

/**
 * Groups from the cluster: makes the registry's groups equal to the cluster's WorkloadGroups
 * (those the selector picks). Level-triggered, like the projector: it compares both sides every
 * time, so a lost watch event, a failed write or two syncs at once are repaired by the next.
 *
 * - A group new or changed in the cluster is applied as `registrar apply` would (its template
 *   change then rolls out to the live entries, paced).
 * - A group gone from the cluster is not deleted here: its removal is asked of the rollout
 *   function (lib/rollout/group-removals.ts), which takes its entries along as `delete wg`
 *   does. So the projector, which talks to the cluster, writes group items only.
 * - A cluster that lists no WorkloadGroup at all while the registry has some (the wrong
 *   context, a selector that matches nothing) removes nothing for EMPTY_LISTING_HOLD_MS: the
 *   removal is asked with a time before which it waits, reported, and withdrawn if the groups
 *   come back (emptying the mesh at once is the worst reading of an empty answer); a cluster
 *   whose last group really was deleted loses it after the hold.
 * - A cluster group the registry cannot take (an invalid field) is reported and the registry
 *   keeps its copy; it is never removed for that.
 */
export async function syncGroups(
  deps: GroupSyncDeps,
  options: GroupSyncOptions,
): Promise<GroupSyncReport> {
  const report: GroupSyncReport = {
    dryRun: options.dryRun ?? false,
    created: [],
    updated: [],
    removing: [],
    kept: [],
    unchanged: 0,
    problems: [],
  };
  const objects = await deps.cluster.list('WorkloadGroup', {
    ...(options.selector ? { labelSelector: options.selector } : {}),
  });
  const read = readClusterGroups(objects, deps.registry);
  report.problems.push(...read.problems);
  const registry = groupsByRef(await listAllGroups(deps.registry));
  const records = new Map(
    (await deps.rollouts.listRollouts()).map((record) => [formatRef(record.group), record]),
  );
  const present = new Set(read.problems.map((problem) => problem.group));
  for (const { group, uid } of read.groups) {
    const key = formatRef(group.metadata);
    present.add(key);
    const existing = registry.get(key);
    const changed = existing ? groupDifferences(existing.group, group).length > 0 : true;
    if (!changed) report.unchanged += 1;
    else if (!report.dryRun) {
      try {
        await deps.registry.applyGroup(withClusterIdentity(group, uid, objects, options.now));
      } catch (error) {
        report.problems.push({ group: key, message: (error as Error).message });
        continue;
      }
    }
    if (changed) (existing ? report.updated : report.created).push(key);
  }
  for (const key of present) {
    if (records.get(key)?.removal === undefined) continue;
    if (!report.dryRun) await deps.rollouts.requestRemoval(parseRef(key), undefined);
    report.kept.push(key);
  }
  const missing = [...registry.values()].filter((s) => !present.has(formatRef(s.group.metadata)));
  // Fail static: a listing with no WorkloadGroup at all while the registry has some (the
  // wrong context, a selector that matches nothing) removes nothing before EMPTY_LISTING_HOLD_MS.
  const empty = objects.length === 0 && missing.length > 0;
  if (empty) {
    report.problems.push({
      group: '*',
      message: `the cluster lists no WorkloadGroup${options.selector ? ` labelled ${options.selector}` : ''}: the removal of ${missing.length} group(s) the registry has waits ${EMPTY_LISTING_HOLD_MS / 60_000} minutes, and is withdrawn if they come back; check the cluster, context and selector`,
    });
  }
  for (const stored of missing) {
    const key = formatRef(stored.group.metadata);
    const uid = stored.group.metadata.uid ?? '';
    const asked = records.get(key)?.removal;
    const same = asked?.uid === uid && asked.generation === stored.generation;
    // Asked again when the group changed, or when a held request can go now (the list is not empty).
    if (!same || (!empty && asked?.notBefore !== undefined)) {
      if (!report.dryRun) {
        await deps.rollouts.requestRemoval(stored.group.metadata, {
          uid,
          generation: stored.generation,
          requestedAt: same && asked ? asked.requestedAt : options.now,
          ...(empty ? { notBefore: options.now + EMPTY_LISTING_HOLD_MS } : {}),
        });
      }
    }
    report.removing.push(key);
  }
  return report;
}

/** The group as the registry stores it: the cluster's uid and creation time on create. */
function withClusterIdentity(
  group: WorkloadGroup,
  uid: string | undefined,
  objects: readonly KubeObject[],
  now: EpochMillis,
): WorkloadGroup {
  const source = objects.find(
    (o) =>
      o.metadata.namespace === group.metadata.namespace && o.metadata.name === group.metadata.name,
  );
  const created = source?.metadata.creationTimestamp;
  return {
    ...group,
    metadata: {
      ...group.metadata,
      ...(uid ? { uid } : {}),
      creationTimestamp: typeof created === 'string' ? created : toRfc3339(now),
    },
  };
}

function parseRef(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** One line per change and problem, as `registrar project` and the local console print them. */
export function describeGroupSync(report: GroupSyncReport): string[] {
  const prefix = report.dryRun ? 'would have ' : '';
  return [
    ...report.created.map(
      (g) => `${prefix}created WorkloadGroup ${g} in the registry (from the cluster)`,
    ),
    ...report.updated.map(
      (g) => `${prefix}updated WorkloadGroup ${g} in the registry (from the cluster)`,
    ),
    ...report.removing.map(
      (g) =>
        `${prefix}removing WorkloadGroup ${g} from the registry (deleted in the cluster; its entries go with it)`,
    ),
    ...report.kept.map(
      (g) => `kept WorkloadGroup ${g}: back in the cluster before its removal ran`,
    ),
    ...report.problems.map((p) =>
      p.group === '*' ? `held: ${p.message}` : `not synced WorkloadGroup ${p.group}: ${p.message}`,
    ),
  ];
}
