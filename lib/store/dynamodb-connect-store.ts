import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { ObjectRef } from '../domain/model.ts';
import { DynamoDbAddressClaims } from './dynamodb-address-claims.ts';
import { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { DynamoDbConnectionRecords } from './dynamodb-connection-records.ts';
import { DynamoDbEntryHistory, type HistoryLost } from './dynamodb-entry-history.ts';
import { DynamoDbEntryLifecycle } from './dynamodb-entry-lifecycle.ts';
import { DynamoDbSweepIndex } from './dynamodb-sweep-index.ts';
import { RegistryTable } from './dynamodb-table.ts';
import type {
  AddressClaim,
  ClaimResult,
  ConnectChange,
  ConnectOutcome,
  EntryDeletion,
  RegistryStore,
  StoredGroup,
} from './registry-store.ts';

/** What `$connect` asks of the registry: its group, its entry, the address claim. */
export type ConnectStore = Pick<
  RegistryStore,
  | 'getGroup'
  | 'getEntry'
  | 'connect'
  | 'withdrawCreated'
  | 'claimAddress'
  | 'takeAddress'
  | 'noteAddressConflict'
  | 'deleteSwept'
>;

/**
 * The registry as `$connect` uses it: the same adapters DynamoDbRegistryStore composes for
 * these calls (the entry lifecycle, the address claims, the sweep index that deletes a holder
 * an address claim replaced, with its history and counters), and none of the others (catalog,
 * departures, sweeper state, cordon), so the connect function's bundle carries only these
 * (issue 27).
 */
export class DynamoDbConnectStore implements ConnectStore {
  readonly #entries: DynamoDbEntryLifecycle;
  readonly #addresses: DynamoDbAddressClaims;
  readonly #sweepIndex: DynamoDbSweepIndex;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: { onHistoryLost?: HistoryLost } = {},
  ) {
    const table = new RegistryTable(client, tableName);
    const counters = new DynamoDbCellCounters(table);
    const history = new DynamoDbEntryHistory(client, tableName, options.onHistoryLost);
    this.#entries = new DynamoDbEntryLifecycle(
      table,
      counters,
      new DynamoDbConnectionRecords(table),
    );
    this.#addresses = new DynamoDbAddressClaims(client, tableName);
    this.#sweepIndex = new DynamoDbSweepIndex(table, counters, history);
  }

  getGroup(ref: ObjectRef): Promise<StoredGroup | undefined> {
    return this.#entries.getGroup(ref);
  }
  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined> {
    return this.#entries.getEntry(ref);
  }
  connect(change: ConnectChange): Promise<ConnectOutcome> {
    return this.#entries.connect(change);
  }
  withdrawCreated(ref: ObjectRef, origin: string): Promise<void> {
    return this.#entries.withdrawCreated(ref, origin);
  }
  claimAddress(claim: AddressClaim): Promise<ClaimResult> {
    return this.#addresses.claim(claim);
  }
  takeAddress(claim: AddressClaim, from: ObjectRef): Promise<boolean> {
    return this.#addresses.take(claim, from);
  }
  noteAddressConflict(
    holder: ObjectRef,
    claim: AddressClaim,
    intervalMs: number,
  ): Promise<boolean> {
    return this.#entries.noteAddressConflict(holder, claim, intervalMs);
  }
  deleteSwept(record: EntryRecord, deletion?: EntryDeletion): Promise<'deleted' | 'conflict'> {
    return this.#sweepIndex.deleteSwept(record, deletion);
  }
}
