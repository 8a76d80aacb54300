import type { StoredGroup } from '../domain/registry-records.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';

/** Namespace Queries in flight at once. */
const LANES = 8;

/**
 * Every group, by the namespace index and a Query per namespace (8 at a time), never a Scan:
 * the rollout function may not Scan. On a table from before the index (not backfilled yet),
 * groups of namespaces missing from it are not seen until the operator's first `get -A`.
 */
export async function listAllGroups(
  catalog: Pick<CatalogStore, 'listNamespaces' | 'listGroups'>,
): Promise<StoredGroup[]> {
  const { namespaces } = await catalog.listNamespaces();
  const lists: StoredGroup[][] = new Array(namespaces.length);
  let next = 0;
  const lane = async () => {
    for (let at = next++; at < namespaces.length; at = next++) {
      lists[at] = await catalog.listGroups(namespaces[at] as string);
    }
  };
  await Promise.all(Array.from({ length: Math.min(LANES, namespaces.length) }, lane));
  return lists.flat();
}
