import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbAddressClaims } from '../store/dynamodb-address-claims.ts';
import { DynamoDbCellCounters } from '../store/dynamodb-cell-counters.ts';
import { DynamoDbConnectionRecords } from '../store/dynamodb-connection-records.ts';
import { DynamoDbEntryHistory } from '../store/dynamodb-entry-history.ts';
import { DynamoDbEntryLifecycle } from '../store/dynamodb-entry-lifecycle.ts';
import { DynamoDbSweepIndex } from '../store/dynamodb-sweep-index.ts';
import { RegistryTable } from '../store/dynamodb-table.ts';
import type { RegistryStore } from '../store/registry-store.ts';
import { composeAdapters } from './compose-adapters.ts';
import type { RegistryOptions } from './registry.ts';

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
 * The registry as `$connect` uses it: the entry lifecycle, the address claims, and the sweep
 * index that deletes a holder an address claim replaced (with its history and counters); none
 * of the others (catalog, departures, sweeper state, cordon), so the connect function's bundle
 * carries only these (issue 27).
 */
export function connectStore(
  client: DynamoDBDocumentClient,
  tableName: string,
  options: RegistryOptions = {},
): ConnectStore {
  const table = new RegistryTable(client, tableName);
  const counters = new DynamoDbCellCounters(table);
  const history = new DynamoDbEntryHistory(client, tableName, options.onHistoryLost);
  return composeAdapters(
    new DynamoDbEntryLifecycle(table, counters, new DynamoDbConnectionRecords(table)),
    new DynamoDbAddressClaims(client, tableName),
    new DynamoDbSweepIndex(table, counters, history),
  ) satisfies ConnectStore;
}
