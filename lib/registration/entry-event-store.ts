import type { EntryEvent } from '../domain/entry-events.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';

export type CordonOutcome =
  | { outcome: 'cordoned' | 'already-cordoned'; record: EntryRecord }
  | { outcome: 'not-found' };

export type UncordonOutcome =
  | { outcome: 'uncordoned' | 'not-cordoned'; record: EntryRecord }
  | { outcome: 'not-found' };

export interface DeletedEntryHistory {
  ref: ObjectRef;
  deletedAt: EpochMillis;
  /** The group that auto-registered it; absent for a hand-made entry. */
  group?: string;
  address?: string;
  /** Oldest first; the last is the deletion. */
  events: EntryEvent[];
}

/** What `registrar cordon` and `uncordon` need: one conditional write per entry. */
export interface CordonStore {
  /** Out of traffic with the operator's message; 'already-cordoned' keeps the first one. */
  cordon(ref: ObjectRef, message: string, at: EpochMillis): Promise<CordonOutcome>;
  uncordon(ref: ObjectRef, at: EpochMillis): Promise<UncordonOutcome>;
}

/** An entry's events beyond the ones its state writes record, and those of deleted entries. */
export interface EntryEventStore {
  /**
   * Records an event on an existing entry in a write of its own (false: the entry is gone).
   * A write that changes the entry's state should carry its event instead (withEntryEvent).
   */
  recordEvent(ref: ObjectRef, event: EntryEvent): Promise<boolean>;
  /** The deleted entries of a namespace (of one name) whose history has not expired. */
  deletedEntries(
    namespace: string,
    name: string | undefined,
    now: EpochMillis,
  ): Promise<DeletedEntryHistory[]>;
  /** Where the table has no TTL (locally): removes up to `limit` expired history items. */
  pruneExpiredHistory(
    namespaces: readonly string[],
    now: EpochMillis,
    limit: number,
  ): Promise<number>;
}

/** DynamoDbEntryHistory: the deleted entries' history items (recordEvent is the lifecycle's). */
export type EntryHistoryStore = Pick<EntryEventStore, 'deletedEntries' | 'pruneExpiredHistory'>;
