import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { EpochMillis, ObjectRef, WorkloadEntry } from '../domain/model.ts';
import type { EntryDeletion, StoredGroup } from '../domain/registry-records.ts';
import type {
  OutdatedPage,
  RolloutEntry,
  RolloutRecord,
  RolloutStore,
} from '../rollout/rollout-store.ts';
import { DynamoDbEntryHistory } from './dynamodb-entry-history.ts';
import { DynamoDbRolloutEntries } from './dynamodb-rollout-entries.ts';
import { DynamoDbRolloutRecords } from './dynamodb-rollout-records.ts';
import { RegistryTable } from './dynamodb-table.ts';

/** Template rollouts on the registry table: the rollout records, and the group's entries. */
export class DynamoDbRollouts implements RolloutStore {
  readonly #records: DynamoDbRolloutRecords;
  readonly #entries: DynamoDbRolloutEntries;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    const table = new RegistryTable(client, tableName);
    this.#records = new DynamoDbRolloutRecords(table);
    this.#entries = new DynamoDbRolloutEntries(table, new DynamoDbEntryHistory(client, tableName));
  }

  listRollouts(): Promise<RolloutRecord[]> {
    return this.#records.listRollouts();
  }
  getRollout(group: ObjectRef): Promise<RolloutRecord | undefined> {
    return this.#records.getRollout(group);
  }
  saveRollout(record: RolloutRecord): Promise<boolean> {
    return this.#records.saveRollout(record);
  }
  deleteRollout(group: ObjectRef): Promise<void> {
    return this.#records.deleteRollout(group);
  }
  setPaused(group: ObjectRef, pausedAt: EpochMillis | undefined): Promise<void> {
    return this.#records.setPaused(group, pausedAt);
  }
  requestRemoval(group: ObjectRef, removal: RolloutRecord['removal']): Promise<void> {
    return this.#records.requestRemoval(group, removal);
  }
  acquireLease(holder: string, now: EpochMillis, until: EpochMillis) {
    return this.#records.acquireLease(holder, now, until);
  }
  releaseLease(holder: string): Promise<void> {
    return this.#records.releaseLease(holder);
  }

  getGroup(group: ObjectRef): Promise<StoredGroup | undefined> {
    return this.#entries.getGroup(group);
  }
  outdatedEntries(
    group: ObjectRef,
    generation: number,
    cursor: string | undefined,
    limit: number,
  ): Promise<OutdatedPage> {
    return this.#entries.outdatedEntries(group, generation, cursor, limit);
  }
  groupEntries(group: ObjectRef): Promise<RolloutEntry[]> {
    return this.#entries.groupEntries(group);
  }
  getRolloutEntry(ref: ObjectRef): Promise<RolloutEntry | undefined> {
    return this.#entries.getRolloutEntry(ref);
  }
  rollOutEntry(
    read: RolloutEntry,
    group: string,
    entry: WorkloadEntry,
    generation: number,
    at: EpochMillis,
  ): Promise<'updated' | 'conflict'> {
    return this.#entries.rollOutEntry(read, group, entry, generation, at);
  }
  removeEntry(ref: ObjectRef, deletion: EntryDeletion): Promise<{ holders: string[] } | undefined> {
    return this.#entries.removeEntry(ref, deletion);
  }
  deleteGroupIf(group: ObjectRef, expected: { uid: string; generation: number }) {
    return this.#entries.deleteGroupIf(group, expected);
  }
}
