import type { EntryRecord } from '../domain/entry-record.ts';
import type {
  EpochMillis,
  ObjectRef,
  VerifiedIdentity,
  WorkloadEntry,
  WorkloadGroup,
} from '../domain/model.ts';
import type { SweepCutoffs } from '../domain/sweep-policy.ts';

/** A WorkloadGroup as stored: the Istio object, with `metadata.uid` and `metadata.generation`. */
export interface StoredGroup {
  group: WorkloadGroup;
  /** Bumped whenever `apply` changes the group's spec. */
  generation: number;
}

/** One connect, as the connect rule decided it: the entry to create if none exists yet. */
export interface ConnectChange {
  /** The entry built from the group template; used only when no entry exists yet. */
  entry: WorkloadEntry;
  autoRegistrationGroup: string;
  healthChecksEnabled: boolean;
  groupGeneration: number;
  connectionId: string;
  /** Server time of the connect (API Gateway's `connectedAt`). */
  connectedAt: EpochMillis;
  controller: string;
  identity: VerifiedIdentity;
}

export type ConnectOutcome =
  /** No entry existed; it was created from the template. */
  | 'created'
  /** The entry existed; only its connection state changed. */
  | 'reconnected'
  /** The connect is older than the recorded connect or disconnect: nothing written. */
  | 'stale'
  /** An entry with that name exists and was made by hand: never overwritten. */
  | 'conflict';

export interface DisconnectChange {
  connectionId: string;
  /** Server time of the disconnect event. */
  at: EpochMillis;
  /**
   * The agent said it closed this connection because a newer one replaced it (make before
   * break). Only a hint for the order of the conditional writes, never for the outcome: it comes
   * from the client, so a wrong hint costs one extra write and changes nothing else.
   */
  replaced?: boolean;
}

export type DisconnectResult =
  | { outcome: 'disconnected'; entry: ObjectRef }
  /** Another live connection still holds the entry (make before break). */
  | { outcome: 'still-held'; entry: ObjectRef }
  /** The connection was already gone from the entry (a late or repeated `$disconnect`). */
  | { outcome: 'unchanged'; entry: ObjectRef }
  /** The connection registered nothing: nothing written. */
  | { outcome: 'unknown-connection' };

export interface HealthReport {
  connectionId: string;
  healthy: boolean;
  message?: string;
  /** When the report was received. */
  at: EpochMillis;
}

export type HealthResult =
  /** The `Healthy` status changed. */
  | { outcome: 'transitioned'; entry: ObjectRef; healthy: boolean }
  /** Same status; `lastProbeTime` (and message) refreshed. */
  | { outcome: 'refreshed'; entry: ObjectRef; healthy: boolean }
  /** From a connection that is not the entry's newest, or older than the stored probe time. */
  | { outcome: 'ignored'; entry: ObjectRef }
  | { outcome: 'unknown-connection' };

/** The entry a live connection registered, for `describe`. */
export interface ConnectionRecord {
  connectionId: string;
  entry: ObjectRef;
  connectedAt: EpochMillis;
}

/**
 * What registration, health and the sweeper need from storage, and nothing more.
 * Every state change is one conditional write; losing a race is an outcome, not an error.
 */
export interface RegistryStore {
  getGroup(ref: ObjectRef): Promise<StoredGroup | undefined>;
  connect(change: ConnectChange): Promise<ConnectOutcome>;
  disconnect(change: DisconnectChange): Promise<DisconnectResult>;
  reportHealth(report: HealthReport): Promise<HealthResult>;
  getConnection(connectionId: string): Promise<ConnectionRecord | undefined>;
  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined>;
  /** Entries that may be due, read from the sparse sweep index (never a table scan). */
  sweepCandidates(cutoffs: SweepCutoffs, limit: number): AsyncIterable<EntryRecord>;
  /**
   * Deletes a swept entry if it is still at the revision the sweeper read, and the records of
   * connections that still point at it. A reconnect that landed in between wins: 'conflict'.
   */
  deleteSwept(record: EntryRecord): Promise<'deleted' | 'conflict'>;
}

/** What the operator CLI needs: groups and entries as documents. */
export interface CatalogStore {
  /** Creates or updates a group; `generation` goes up only when its spec changes. */
  applyGroup(
    group: WorkloadGroup,
  ): Promise<{ outcome: 'created' | 'updated' | 'unchanged'; group: WorkloadGroup }>;
  listGroups(namespace?: string): Promise<StoredGroup[]>;
  deleteGroup(ref: ObjectRef): Promise<boolean>;
  /** Creates or updates a hand-made entry; refuses ('conflict') to overwrite an auto-registered one. */
  applyEntry(entry: WorkloadEntry): Promise<'created' | 'updated' | 'unchanged' | 'conflict'>;
  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined>;
  listEntries(namespace?: string): Promise<EntryRecord[]>;
  deleteEntry(ref: ObjectRef): Promise<boolean>;
}
