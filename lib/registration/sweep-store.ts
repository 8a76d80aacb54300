import type { DisruptionRecord, ZoneCount } from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { EntryDeletion } from '../domain/registry-records.ts';
import type { LivenessWindow, SweepCutoffs } from '../domain/sweep-policy.ts';

// The ports of the sweep (lib/registration/sweep.ts): the sweep index, each namespace's
// departures, the liveness mark, and fail static's counters and record. The run's lease is
// lib/sweep's (sweep-lease-store.ts).

/** The sweep index's states: connected (C), left abnormally (D), left cleanly (L). */
export type SweepIndexState = 'C' | 'D' | 'L';

/** How a departed entry is keyed in the sweep index: left cleanly (L) or abnormally (D). */
export type DepartureKey = 'D' | 'L';

/** The entries away after an abnormal departure, counted from the sweep index. */
/** See DepartureStore.departuresInGrace; `more` when `limit` was reached. */
export interface DeparturesInGrace {
  count: number;
  more: boolean;
  firstDisconnectedAt?: EpochMillis;
}

export interface AwayCount {
  /** By cell (`<namespace>#<zone>`), for the namespaces counted. */
  byCell: Record<string, number>;
  /** The namespaces whose keys were counted in full: only their cells are known. */
  namespaces: ReadonlySet<string>;
}

/** What the sweeper's fail-static guard reads and keeps (lib/domain/disruption.ts). */
export interface DisruptionStore {
  /** One counter item per zone: one query of one partition, O(zones). */
  zoneCounts(): Promise<ZoneCount[]>;
  /**
   * The entries away after an abnormal departure, counted by cell from the sweep index itself
   * (its `D` keys: reads proportional to those entries, never the table): 0.1.0's shared keys
   * and the given namespaces' own, at most `limit` items in all; a namespace that would take
   * the count past it is left uncounted, and undefined when the shared keys alone hold more.
   * The counters can drift (a write that failed for good after its entry's); this cannot.
   */
  awayByZone(limit: number, namespaces?: readonly string[]): Promise<AwayCount | undefined>;
  /** The newest connect anywhere, from the head of each connected shard of the sweep index. */
  newestConnectAt(): Promise<EpochMillis | undefined>;
  disruptionRecord(): Promise<DisruptionRecord | undefined>;
  saveDisruptionRecord(record: DisruptionRecord): Promise<void>;
  /**
   * `registrar sweep --force`: releases a hold (or a slowdown) until the disruption ends.
   * 'normal': there was none to release.
   */
  releaseHold(at: EpochMillis): Promise<'released' | 'normal'>;
}

/** The sweep index: the keys every namespace shares, and the sweeper's deletion (DynamoDbSweepIndex). */
export interface SweepIndexStore {
  /**
   * Entries that may be due, read from the sweep index keys every namespace shares (never a
   * table scan), in the order of `states`: `L` left cleanly and `D` left abnormally as release
   * 0.1.0 keyed them (read until none is left), `C` still marked connected (stale). Default
   * all three. Each namespace's own departures: departuresOf.
   *
   * With `onReadFailure`, a read that fails (after the SDK's retries) skips the rest of its
   * index shard and the others are still read: one throttled page does not hide every other
   * candidate. Without it, the failure is thrown.
   */
  sweepCandidates(
    cutoffs: SweepCutoffs,
    limit: number,
    states?: readonly SweepIndexState[],
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord>;
  /** Connected entries whose newest connect falls in one of the windows (liveness checks). */
  connectedIn(
    windows: readonly LivenessWindow[],
    limit: number,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord>;
  /**
   * Deletes a swept entry if it is still at the revision the sweeper read. A reconnect that
   * landed in between wins: 'conflict'. Safe to retry: an entry already gone is 'deleted'.
   */
  deleteSwept(record: EntryRecord, deletion?: EntryDeletion): Promise<'deleted' | 'conflict'>;
}

/** Each namespace's departures (DynamoDbDepartureQueues). */
export interface DepartureStore {
  /**
   * The namespaces whose departures the sweeper reads: the namespace index (one Query) and the
   * namespaces of the fail-static cell counters (read unless given: the sweeper's fail-static
   * guard reads them anyway).
   */
  sweepNamespaces(counted?: readonly ZoneCount[]): Promise<string[]>;
  /**
   * One namespace's departures of one kind (`L` left cleanly, `D` left abnormally)
   * disconnected at or before the cutoff, oldest first, read a page at a time from its own
   * sweep index keys: another namespace's backlog is never read before them. With
   * `onReadFailure`, a shard whose read fails ends there and the others are still read.
   */
  departuresOf(
    namespace: string,
    kind: DepartureKey,
    disconnectedAtOrBefore: EpochMillis,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord>;
  /**
   * Departed entries still within their grace period (disconnected after the cutoff), counted
   * from the sweep index up to `limit`, and the earliest disconnect among them: what a sweep
   * leaves for later (`registrar sweep` says so).
   */
  departuresInGrace(disconnectedAfter: EpochMillis, limit: number): Promise<DeparturesInGrace>;
  /**
   * A rollback to release 0.1.0: moves every namespace's departures back to the shared keys
   * 0.1.0's sweeper reads (`L#<shard>`, `D#<shard>`). Idempotent and resumable; at most `limit`
   * moves, `more` when some may be left.
   */
  moveDeparturesToSharedKeys(limit?: number): Promise<{ moved: number; more: boolean }>;
}

/** Up to when the sweeper's liveness checks have covered time (DynamoDbSweeperState). */
export interface LivenessMarkStore {
  /** Up to when the sweeper's liveness checks have covered time; undefined before the first. */
  livenessMark(): Promise<EpochMillis | undefined>;
  setLivenessMark(at: EpochMillis): Promise<void>;
}
