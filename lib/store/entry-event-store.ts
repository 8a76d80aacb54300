import type { EntryEvent } from '../domain/entry-events.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { CordonOutcome, UncordonOutcome } from './dynamodb-cordon.ts';
import type { DeletedEntryHistory } from './dynamodb-entry-history.ts';

export type { CordonOutcome, DeletedEntryHistory, UncordonOutcome };

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
