import { type EpochMillis, formatRef } from '../domain/model.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';
import { removeGroupEntries } from '../registration/remove-group-entries.ts';
import type { RolloutRecord, RolloutStore } from './rollout-store.ts';

export interface GroupRemovalDeps {
  store: Pick<RolloutStore, 'deleteGroupIf' | 'deleteRollout' | 'requestRemoval' | 'removeEntry'>;
  catalog: Pick<CatalogStore, 'listEntries'>;
  /** Closes the connections that held removed entries (API Gateway's management API). */
  closeConnections(connectionIds: readonly string[]): Promise<{ closed: number; failed: number }>;
  /** Where groups come from now: a removal asked for under `cluster` is void under `registry`. */
  groupsFromCluster: boolean;
  now(): EpochMillis;
}

export interface GroupRemovalResult {
  /** Groups removed, with the entries they took along. */
  removed: { group: string; entries: number }[];
  /** Removals dropped: the group was changed or re-created since, or groups come from the registry now. */
  withdrawn: string[];
  /** Removals asked after an empty cluster listing, not due yet. */
  held: string[];
  closed: number;
  notClosed: number;
}

/**
 * Groups the group sync saw deleted in the cluster: each is removed as `registrar delete wg`
 * removes one (the group, then the entries it auto-registered, then their connections closed
 * so the agents notice), if it still has the uid and generation the sync saw. Done here, by
 * the rollout function, so the projector (which talks to the cluster) may write group items
 * only and never deletes an entry. Each removal is idempotent: a run that dies midway repeats
 * it, and a group already gone still has its entries taken along.
 */
export async function processGroupRemovals(
  deps: GroupRemovalDeps,
  records: readonly RolloutRecord[],
): Promise<GroupRemovalResult> {
  const result: GroupRemovalResult = {
    removed: [],
    withdrawn: [],
    held: [],
    closed: 0,
    notClosed: 0,
  };
  for (const record of records) {
    const removal = record.removal;
    if (!removal) continue;
    const key = formatRef(record.group);
    if (removal.notBefore !== undefined && removal.notBefore > deps.now()) {
      result.held.push(key);
      continue;
    }
    if (!deps.groupsFromCluster) {
      await deps.store.requestRemoval(record.group, undefined);
      result.withdrawn.push(key);
      continue;
    }
    const outcome = await deps.store.deleteGroupIf(record.group, removal);
    if (outcome === 'changed') {
      await deps.store.requestRemoval(record.group, undefined);
      result.withdrawn.push(key);
      continue;
    }
    const entries = await removeGroupEntries(
      {
        listEntries: (ns) => deps.catalog.listEntries(ns),
        removeEntry: (ref, deletion) => deps.store.removeEntry(ref, deletion ?? { at: deps.now() }),
      },
      record.group,
      {
        at: deps.now(),
        cause: { kind: 'operator', cascade: record.group.name },
        note: 'its WorkloadGroup was deleted in the Kubernetes cluster (groups come from there)',
      },
    );
    const holders = entries.flatMap((entry) => entry.holders);
    if (holders.length > 0) {
      const { closed, failed } = await deps.closeConnections(holders);
      result.closed += closed;
      result.notClosed += failed;
    }
    await deps.store.deleteRollout(record.group);
    result.removed.push({ group: key, entries: entries.length });
  }
  return result;
}
