import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis, ObjectRef, WorkloadEntry, WorkloadGroup } from '../domain/model.ts';
import type { EntryDeletion, StoredGroup } from '../domain/registry-records.ts';
import type { DocumentSizeLimits } from '../protocol/document-size-limits.ts';

// The ports of the operators' catalog (registrar apply, get, delete) and of the EC2
// state-change function's instance index.

/** The namespaces that hold groups or entries, from the namespace index (never a Scan). */
export interface NamespaceList {
  namespaces: string[];
  /**
   * False on a table written before the index existed, until its one-time backfill (the first
   * `registrar get -A` by an operator): namespaces may then be missing from `namespaces`.
   */
  complete: boolean;
}

/**
 * What the operator CLI needs: groups and entries as documents, and what one may weigh (a
 * caller that parses documents refuses one too large before it writes any: the group sync).
 */
export interface CatalogStore extends DocumentSizeLimits {
  /** One Query of the namespace index: the projector's full reconcile reads namespaces so. */
  listNamespaces(): Promise<NamespaceList>;
  /** Creates or updates a group; `generation` goes up only when its spec changes. */
  applyGroup(
    group: WorkloadGroup,
  ): Promise<{ outcome: 'created' | 'updated' | 'unchanged'; group: WorkloadGroup }>;
  listGroups(namespace?: string): Promise<StoredGroup[]>;
  deleteGroup(ref: ObjectRef): Promise<boolean>;
  /** Creates or updates a hand-made entry; refuses ('conflict') to overwrite an auto-registered one. */
  applyEntry(entry: WorkloadEntry): Promise<'created' | 'updated' | 'unchanged' | 'conflict'>;
  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined>;
  /** One namespace: a Query. All: the namespace index, then a Query per namespace. */
  listEntries(namespace?: string): Promise<EntryRecord[]>;
  deleteEntry(ref: ObjectRef): Promise<boolean>;
  /** Deletes an entry; the connections that held it when it went, undefined when it was not there. */
  removeEntry(ref: ObjectRef, deletion?: EntryDeletion): Promise<{ holders: string[] } | undefined>;
}

/** DynamoDbCatalog: the operators' documents (an entry is read by the lifecycle's getEntry). */
export type CatalogDocumentStore = Omit<CatalogStore, 'getEntry'>;

/** What the EC2 state-change function needs: the instance's entries, and their removal. */
export interface InstanceStore {
  /** Entries whose newest connect named this instance (the sparse `instance` index). */
  entriesOfInstance(instanceId: string): Promise<ObjectRef[]>;
  /** Deletes the entry if it still names the instance; 'kept' when a newer connect replaced it. */
  removeInstanceEntry(
    ref: ObjectRef,
    instanceId: string,
    at?: EpochMillis,
  ): Promise<'deleted' | 'kept'>;
}
