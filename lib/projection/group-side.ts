import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { GroupSource } from '../domain/group-source.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';
import type { RolloutStore } from '../rollout/rollout-store.ts';
import type { Cluster } from './cluster.ts';
import { checkGroupDrift, type GroupDrift } from './group-drift.ts';
import { type GroupSyncReport, syncGroups } from './group-sync.ts';

/** What the projector needs for the groups: where they come from, and the stores to keep them. */
export interface GroupSideDeps {
  source: GroupSource;
  registry: Pick<
    CatalogStore,
    'listNamespaces' | 'listGroups' | 'applyGroup' | 'groupSizeRefusal' | 'entrySizeRefusal'
  >;
  rollouts: Pick<RolloutStore, 'listRollouts' | 'requestRemoval'>;
  now(): EpochMillis;
}

export interface GroupSideReport {
  sync?: GroupSyncReport;
  drift?: GroupDrift[];
}

/** Metric names (namespace WorkloadRegistrar, dimension service). */
export const GROUP_METRIC = {
  /** Groups the sync created, updated or asked to remove. */
  syncChanges: 'GroupSyncChanges',
  /** Cluster groups the registry could not take, and held removals. */
  syncProblems: 'GroupSyncProblems',
  /** Default mode: cluster copies that differ from the registry's, or that it does not have. */
  drift: 'GroupDrift',
} as const;

/**
 * The groups' side of a scheduled projector run. Groups from the cluster: the sync. Groups from
 * the registry: the drift check, so a cluster copy changed with kubectl is reported, never
 * silently ignored.
 */
export async function reconcileGroups(
  deps: GroupSideDeps,
  cluster: Pick<Cluster, 'list'>,
): Promise<GroupSideReport> {
  // The source itself is recorded for clients by the rollout function, which every stack runs.
  if (deps.source.kind === 'cluster') {
    return {
      sync: await syncGroups(
        { cluster, registry: deps.registry, rollouts: deps.rollouts },
        { ...(deps.source.selector ? { selector: deps.source.selector } : {}), now: deps.now() },
      ),
    };
  }
  return { drift: await checkGroupDrift(deps.registry, cluster) };
}

/** Every run emits what applies to its mode, zeros included (an alarm sees data). */
export function recordGroupMetrics(metrics: Metrics, report: GroupSideReport): void {
  if (report.sync) {
    const { created, updated, removing, problems } = report.sync;
    const changes = created.length + updated.length + removing.length;
    metrics.addMetric(GROUP_METRIC.syncChanges, MetricUnit.Count, changes);
    metrics.addMetric(GROUP_METRIC.syncProblems, MetricUnit.Count, problems.length);
  }
  if (report.drift) metrics.addMetric(GROUP_METRIC.drift, MetricUnit.Count, report.drift.length);
}
