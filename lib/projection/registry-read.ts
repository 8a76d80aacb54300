import type { EntryRecord } from '../domain/entry-record.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';
import { type Cluster, KindNotInstalledError } from './cluster.ts';
import { MANAGED_SELECTOR } from './kinds.ts';
import { type NamespaceCoverage, TARGET_KINDS, type Target } from './report.ts';

/** Namespace reads in flight at once: two Queries each (its entries, its groups). */
const READ_CONCURRENCY = 8;

export type RegistryReader = Pick<CatalogStore, 'listNamespaces' | 'listEntries' | 'listGroups'>;

export interface RegistrySnapshot {
  entries: EntryRecord[];
  groups: StoredGroup[];
  coverage: NamespaceCoverage;
}

/**
 * The whole registry for the periodic full reconcile, read by namespace: one Query of the
 * namespace index, then one Query per namespace (never a Scan: the projector may not Scan,
 * and a Scan reads every token, policy and connection record too).
 *
 * The full reconcile deletes every object of ours that the registry does not hold, so a
 * namespace missing from the index would lose its objects from the cluster. On a table from
 * before the index (not yet backfilled) the namespaces in which the cluster holds our objects
 * are read as well: an upgrade keeps every projected namespace. A list that fails (other than
 * a kind whose CRD is missing, which holds nothing) fails the read: the run then writes nothing.
 */
export async function readRegistry(
  store: RegistryReader,
  cluster: Cluster,
  targets: readonly Target[],
): Promise<RegistrySnapshot> {
  const index = await store.listNamespaces();
  const indexed = new Set(index.namespaces);
  const fromCluster = index.complete ? [] : await clusterNamespaces(cluster, targets, indexed);
  const namespaces = [...indexed, ...fromCluster].sort();
  // Groups always: the linkerd target builds from them, and every target holds an entry to
  // its group's address ranges (endpoint-ranges.ts).
  const read = await inLanes(namespaces, async (namespace) => ({
    entries: await store.listEntries(namespace),
    groups: await store.listGroups(namespace),
  }));
  return {
    entries: read.flatMap((one) => one.entries),
    groups: read.flatMap((one) => one.groups),
    coverage: { read: namespaces.length, indexComplete: index.complete, fromCluster },
  };
}

/** Namespaces where the cluster holds objects we manage, and the index does not name. */
async function clusterNamespaces(
  cluster: Cluster,
  targets: readonly Target[],
  indexed: ReadonlySet<string>,
): Promise<string[]> {
  const found = new Set<string>();
  for (const target of targets) {
    try {
      const objects = await cluster.list(TARGET_KINDS[target], { labelSelector: MANAGED_SELECTOR });
      for (const object of objects) {
        const namespace = object.metadata.namespace;
        if (namespace !== undefined && !indexed.has(namespace)) found.add(namespace);
      }
    } catch (error) {
      // Reported by the target's own reconcile, which lists the same kind first.
      if (!(error instanceof KindNotInstalledError)) throw error;
    }
  }
  return [...found].sort();
}

/** `work` over `items`, READ_CONCURRENCY at a time, results in the items' order. */
async function inLanes<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let at = next++; at < items.length; at = next++) {
      results[at] = await work(items[at] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, items.length) }, lane));
  return results;
}
