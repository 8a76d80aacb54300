import { isDeepStrictEqual } from 'node:util';
import type { EntryRecord } from '../lib/domain/entry-record.ts';
import type { WorkloadEntry, WorkloadGroup } from '../lib/domain/model.ts';
import type { StoredGroup } from '../lib/domain/registry-records.ts';

/**
 * What `apply` would do to one object, decided from what the store holds without writing:
 * `apply --dry-run=server` and `diff` use it. The same comparisons as the store's apply
 * (lib/store/dynamodb-catalog.ts): a group changes when its spec, labels, annotations or
 * apiVersion do; an entry when anything but its uid does.
 */
export type ApplyOutcome = 'created' | 'updated' | 'unchanged';

/** The group as apply would leave it: the store keeps uid and creation time, and counts generations. */
export function appliedGroup(
  existing: StoredGroup | undefined,
  group: WorkloadGroup,
): {
  outcome: ApplyOutcome;
  group: WorkloadGroup;
} {
  const wanted = plain(group);
  if (!existing)
    return {
      outcome: 'created',
      group: { ...wanted, metadata: { ...wanted.metadata, generation: 1 } },
    };
  const old = existing.group;
  const specChanged = !isDeepStrictEqual(plain(old.spec), wanted.spec);
  const metaChanged =
    !isDeepStrictEqual(old.metadata.labels ?? {}, wanted.metadata.labels ?? {}) ||
    !isDeepStrictEqual(old.metadata.annotations ?? {}, wanted.metadata.annotations ?? {});
  const unchanged = !specChanged && !metaChanged && old.apiVersion === wanted.apiVersion;
  const metadata = {
    ...wanted.metadata,
    uid: old.metadata.uid,
    creationTimestamp: old.metadata.creationTimestamp,
    generation: existing.generation + (specChanged ? 1 : 0),
  };
  return {
    outcome: unchanged ? 'unchanged' : 'updated',
    group: unchanged
      ? { ...old, metadata: { ...old.metadata, generation: existing.generation } }
      : { ...wanted, metadata },
  };
}

/** The hand-made entry as apply would leave it (an auto-registered one is refused before). */
export function appliedEntry(
  existing: EntryRecord | undefined,
  entry: WorkloadEntry,
): {
  outcome: ApplyOutcome;
  entry: WorkloadEntry;
} {
  if (!existing) return { outcome: 'created', entry: plain(entry) };
  const uid = entry.metadata.uid ?? existing.entry.metadata.uid;
  const wanted = plain({ ...entry, metadata: { ...entry.metadata, uid } });
  const unchanged = isDeepStrictEqual(plain(existing.entry), wanted);
  return { outcome: unchanged ? 'unchanged' : 'updated', entry: wanted };
}

/** Without undefined fields, as the store writes it. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
