import type { DeletionCause } from './entry-events.ts';
import type { EpochMillis, ObjectRef, WorkloadGroup } from './model.ts';

// What every port of the registry speaks of: a stored group, an entry's deletion, a holder.

/** A WorkloadGroup as stored: the Istio object, with `metadata.uid` and `metadata.generation`. */
export interface StoredGroup {
  group: WorkloadGroup;
  /** Bumped whenever `apply` changes the group's spec. */
  generation: number;
}

/** When and why an entry is deleted: kept with its events in a history item. */
export interface EntryDeletion {
  at: EpochMillis;
  /** Absent: read from the entry (the sweeper's rule that made it due). */
  cause?: DeletionCause;
  /** Added to the event's message: how fail static paced it, say. */
  note?: string;
}

/** Where a connection's entry is: carried by the connection, or looked up by its record. */
export interface HolderRef {
  connectionId: string;
  entry: ObjectRef;
}
