import type { EpochMillis } from '../../lib/domain/model.ts';
import type { CatalogStore } from '../../lib/registration/catalog-store.ts';
import type { EntryEventStore } from '../../lib/registration/entry-event-store.ts';

/** Expired history items deleted per run at most: pruning is never urgent. */
export const PRUNE_LIMIT = 100;

/**
 * On AWS the table's TTL removes a deleted entry's history item once it expired; dynalite has
 * no TTL. Reads skip expired items either way; this keeps the local table from growing with
 * them: every interval, up to PRUNE_LIMIT expired items of the indexed namespaces go.
 */
export function startHistoryPruner(
  store: Pick<EntryEventStore, 'pruneExpiredHistory'> & Pick<CatalogStore, 'listNamespaces'>,
  intervalMs: number,
  now: () => EpochMillis,
  onError: (error: unknown) => void,
): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= store
      .listNamespaces()
      .then(({ namespaces }) => store.pruneExpiredHistory(namespaces, now(), PRUNE_LIMIT))
      .then(
        () => undefined,
        (error: unknown) => onError(error),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const interval = setInterval(tick, intervalMs);
  return {
    stop: async () => {
      clearInterval(interval);
      await running;
    },
  };
}
