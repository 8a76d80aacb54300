import type { Cidr } from '../domain/cidr.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';
import type { NamespaceSettingsStore } from '../registration/namespace-settings-store.ts';
import { type ApplyContext, applyActions, messageOf, unmanagedKey } from './apply.ts';
import type { Cluster } from './cluster.ts';
import type { DesiredState } from './desired.ts';
import { desiredWorkloadEntries } from './desired-istio.ts';
import { desiredExternalWorkloads } from './desired-linkerd.ts';
import { diff } from './diff.ts';
import {
  type EndpointRanges,
  endpointRanges,
  filterEndpoints,
  groupRanges,
} from './endpoint-ranges.ts';
import { KINDS, MANAGED_BY_LABEL, MANAGED_SELECTOR, MANAGER } from './kinds.ts';
import type { KubeObject } from './objects.ts';
import { readRegistry } from './registry-read.ts';
import { emptyReport, type ProjectionReport, TARGET_KINDS, type Target } from './report.ts';
import { reconcileSlices } from './slice-reconciler.ts';

export interface ProjectorOptions {
  targets: readonly Target[];
  /** Plan and report, write nothing. */
  dryRun?: boolean;
  /** Passes per namespace and target when writes keep losing races. Default 5. */
  maxAttempts?: number;
  /** Writes in flight at once. Default 8: fast enough, gentle on API priority and fairness. */
  concurrency?: number;
  /** Monotonic milliseconds, for the reported duration. */
  now?: () => number;
  /** The cluster's pod and Service ranges: no entry with an address in them is written. */
  clusterRanges?: readonly Cidr[];
}

/**
 * What one run covers. The periodic run covers everything; a DynamoDB stream batch covers the
 * namespaces it touched, and for EndpointSlices only the Services that select (or selected)
 * the entries that changed.
 */
export type ReconcileScope = { kind: 'all' } | { kind: 'namespaces'; namespaces: NamespaceScope[] };

export interface NamespaceScope {
  namespace: string;
  /** Names of entries that changed; undefined means every Service of the namespace. */
  changedEntries?: readonly string[];
}

export interface ProjectorDeps {
  store: Pick<CatalogStore, 'listNamespaces' | 'listEntries' | 'listGroups' | 'getEntry'>;
  cluster: Cluster;
  /** Namespaces' address ranges (one Query a run); absent, only the cluster's ranges apply. */
  settings?: Pick<NamespaceSettingsStore, 'listSettings'>;
}

/**
 * One level-triggered reconcile: desired state from the registry, actual state from the
 * cluster, and only the difference written. Nothing depends on having seen earlier events, so
 * a missed stream record, two runs at once or a hand edit are all repaired by the next run.
 */
export async function reconcile(
  deps: ProjectorDeps,
  options: ProjectorOptions,
  scope: ReconcileScope = { kind: 'all' },
): Promise<ProjectionReport> {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const report = emptyReport(options.dryRun ?? false);
  const units: (NamespaceScope | { namespace: undefined; changedEntries?: undefined })[] =
    scope.kind === 'all' ? [{ namespace: undefined }] : scope.namespaces;
  const unmanaged = new Set<string>();
  let ranges: EndpointRanges;
  try {
    ranges = endpointRanges(
      options.clusterRanges ?? [],
      deps.settings ? await deps.settings.listSettings() : [],
    );
  } catch (error) {
    // Without the namespaces' ranges nothing is known to be allowed: write nothing this run.
    report.errors.push({ target: 'registry', message: messageOf(error) });
    report.durationMs = now() - started;
    return report;
  }
  const refused = new Set<string>();
  const allowed = (records: EntryRecord[], groups: readonly StoredGroup[]): EntryRecord[] => {
    const filtered = filterEndpoints(records, ranges, groupRanges(groups));
    for (const endpoint of filtered.refused) {
      const key = `${endpoint.namespace}/${endpoint.name}`;
      if (refused.has(key)) continue;
      refused.add(key);
      report.refused.push(endpoint);
    }
    return filtered.allowed;
  };
  for (const unit of units) {
    // A stream batch names the entries it changed: WorkloadEntries and ExternalWorkloads are
    // one object per entry, so they are read and written for those entries only (a read each,
    // from the registry and from the cluster), never the whole namespace. EndpointSlices pack a
    // Service's endpoints together and still need the namespace's entries.
    const changed = unit.namespace !== undefined ? unit.changedEntries : undefined;
    const needsAll = changed === undefined || options.targets.includes('endpointslices');
    let entries: EntryRecord[];
    let changedRecords: EntryRecord[] | undefined;
    let groups: StoredGroup[] = [];
    try {
      if (unit.namespace === undefined) {
        // The full reconcile: the registry by namespace, never a Scan (registry-read.ts).
        const snapshot = await readRegistry(deps.store, deps.cluster, options.targets);
        entries = snapshot.entries;
        groups = snapshot.groups;
        report.namespaces = snapshot.coverage;
      } else {
        entries = needsAll ? await deps.store.listEntries(unit.namespace) : [];
        // Every target holds the entries to their groups' address ranges (one Query).
        groups = await deps.store.listGroups(unit.namespace);
      }
      if (changed !== undefined && unit.namespace !== undefined) {
        const namespace = unit.namespace;
        changedRecords = needsAll
          ? entries.filter((record) => changed.includes(record.entry.metadata.name))
          : (
              await Promise.all(changed.map((name) => deps.store.getEntry({ namespace, name })))
            ).filter((record): record is EntryRecord => record !== undefined);
      }
    } catch (error) {
      report.errors.push({
        target: 'registry',
        namespace: unit.namespace,
        message: messageOf(error),
      });
      continue;
    }
    // Refused entries are left out of what every target wants: an object of theirs already in
    // the cluster is deleted like one of an entry that is gone.
    entries = allowed(entries, groups);
    if (changedRecords !== undefined) changedRecords = allowed(changedRecords, groups);
    for (const target of options.targets) {
      const ctx: ApplyContext = {
        cluster: deps.cluster,
        report,
        target,
        dryRun: report.dryRun,
        concurrency: options.concurrency ?? 8,
        unmanaged,
      };
      const attempts = options.maxAttempts ?? 5;
      try {
        if (target === 'endpointslices') {
          await reconcileSlices(ctx, {
            namespace: unit.namespace,
            entries,
            changedEntries: unit.changedEntries,
            attempts,
          });
        } else {
          const named = changedRecords ?? entries;
          const compute =
            target === 'istio'
              ? async () =>
                  desiredWorkloadEntries(
                    named,
                    await deps.cluster.list('WorkloadGroup', { namespace: unit.namespace }),
                  )
              : async () => desiredExternalWorkloads(named, groups);
          await reconcileNamed(ctx, target, unit.namespace, compute, attempts, changed);
        }
      } catch (error) {
        report.errors.push({
          target,
          kind: TARGET_KINDS[target],
          namespace: unit.namespace,
          message: messageOf(error),
        });
      }
    }
  }
  report.durationMs = now() - started;
  return report;
}

/**
 * WorkloadEntries and ExternalWorkloads: one object per entry, matched by name. With `names`
 * (a stream batch), only those objects are read, one GET each, and only they are written or
 * deleted: the rest of the namespace is the periodic reconcile's.
 */
async function reconcileNamed(
  ctx: ApplyContext,
  target: Target,
  namespace: string | undefined,
  compute: () => Promise<DesiredState>,
  attempts: number,
  names?: readonly string[],
): Promise<void> {
  const kind = TARGET_KINDS[target];
  let desired: DesiredState | undefined;
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    // Read first: when the CRD is missing this is the request that says so.
    const actual =
      names !== undefined && namespace !== undefined
        ? await managedObjects(ctx, kind, namespace, names)
        : await ctx.cluster.list(kind, { namespace, labelSelector: MANAGED_SELECTOR });
    if (!desired) {
      desired = await compute();
      ctx.report.problems.push(...desired.problems);
    }
    const objects = desired.objects.filter(
      (object) =>
        !ctx.unmanaged.has(unmanagedKey(kind, object.metadata.namespace, object.metadata.name)),
    );
    const actions = diff({
      kind,
      statusSubresource: KINDS[kind].statusSubresource,
      desired: objects,
      actual,
      keep: new Set(desired.problems.map((problem) => `${problem.namespace}/${problem.name}`)),
    });
    if ((await applyActions(actions, ctx)) === 'done') return;
  }
  throw new Error(
    `gave up after ${attempts} passes: ${kind} objects kept changing while being written`,
  );
}

/** The objects of these names that the projector manages (its label), read one by one. */
async function managedObjects(
  ctx: ApplyContext,
  kind: (typeof TARGET_KINDS)[Target],
  namespace: string,
  names: readonly string[],
): Promise<KubeObject[]> {
  const objects = await Promise.all(
    names.map((name) => ctx.cluster.get(kind, { namespace, name })),
  );
  return objects.filter(
    (object): object is KubeObject => object?.metadata.labels?.[MANAGED_BY_LABEL] === MANAGER,
  );
}
