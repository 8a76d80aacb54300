import type { ObjectRef } from '../domain/model.ts';
import type { EntryDeletion } from '../domain/registry-records.ts';
import type { CatalogStore } from './catalog-store.ts';
import { type MonotonicClock, monotonicNow, waitOutGroupReads } from './group-read-window.ts';

/** An entry taken along with its group, and the connections that held it when it went. */
export interface RemovedEntry {
  name: string;
  holders: string[];
}

/**
 * The cascade of a group's deletion (`registrar delete wg`, and a group deleted in the cluster
 * when groups come from there), as Kubernetes garbage-collects dependents through their
 * ownerReference: every entry the group auto-registered is deleted, hand-made ones are kept.
 * Each entry's history item names the cascade (`deletion`). Each entry's holders are read from the deleted item itself, so a connect that landed after
 * the listing is among them. The caller closes them once every entry is gone (never before: an
 * agent that reconnected early would join an entry about to be deleted).
 *
 * Called once the group's deletion answered; lists the entries no sooner than
 * GROUP_READ_WINDOW_MS after that, so a connect that read the group before its deletion and
 * created its entry within the window is in the listing (group-read-window.ts).
 */
export async function removeGroupEntries(
  catalog: Pick<CatalogStore, 'listEntries' | 'removeEntry'>,
  group: ObjectRef,
  deletion: EntryDeletion,
  onRemoved?: (entry: RemovedEntry) => void,
  timing: {
    deletedAt?: number;
    clock?: MonotonicClock;
    wait?: (ms: number) => Promise<unknown>;
  } = {},
): Promise<RemovedEntry[]> {
  const clock = timing.clock ?? monotonicNow;
  await waitOutGroupReads(timing.deletedAt ?? clock(), clock, timing.wait);
  const owned = (await catalog.listEntries(group.namespace)).filter(
    (record) => record.autoRegistrationGroup === group.name,
  );
  const removed: RemovedEntry[] = [];
  for (const record of owned) {
    const name = record.entry.metadata.name;
    const gone = await catalog.removeEntry({ namespace: group.namespace, name }, deletion);
    if (!gone) continue;
    const entry = { name, holders: gone.holders };
    removed.push(entry);
    onRemoved?.(entry);
  }
  return removed;
}
