import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import { formatRef } from '../domain/model.ts';
import type { RegistryStore, StoredGroup } from '../store/registry-store.ts';

export type GroupReader = Pick<RegistryStore, 'getGroup'>;

// A Lambda container serves one region's agents; a few hundred groups is already a lot.
const MAX_CACHED_GROUPS = 500;

/**
 * Reuses a group read for `ttlMs` (DESIGN's budget: connect <= 1 group read, "may be cached
 * briefly"). A reconnect storm after an API Gateway deploy reconnects every VM of a group
 * within seconds; without the cache each one reads the same group. Absent groups are not
 * cached, so `registrar apply` followed by a connect works at once. A changed template
 * reaches new entries within `ttlMs`; existing entries are never rebuilt anyway.
 */
export function createGroupCache(
  store: GroupReader,
  ttlMs: number,
  now: () => EpochMillis,
): GroupReader {
  if (ttlMs <= 0) return store;
  const cached = new Map<string, { group: StoredGroup; until: EpochMillis }>();
  return {
    async getGroup(ref: ObjectRef) {
      const key = formatRef(ref);
      const hit = cached.get(key);
      if (hit && hit.until > now()) return hit.group;
      const group = await store.getGroup(ref);
      cached.delete(key);
      if (group) {
        if (cached.size >= MAX_CACHED_GROUPS) evictOldest(cached);
        cached.set(key, { group, until: now() + ttlMs });
      }
      return group;
    },
  };
}

/** Maps iterate in insertion order, so the first key is the oldest read. */
function evictOldest(cached: Map<string, unknown>): void {
  const oldest = cached.keys().next();
  if (!oldest.done) cached.delete(oldest.value);
}
