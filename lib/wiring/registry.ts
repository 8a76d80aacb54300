import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbAddressClaims } from '../store/dynamodb-address-claims.ts';
import { DynamoDbCatalog } from '../store/dynamodb-catalog.ts';
import { DynamoDbCellCounters } from '../store/dynamodb-cell-counters.ts';
import { DynamoDbConnectionRecords } from '../store/dynamodb-connection-records.ts';
import { DynamoDbCordon } from '../store/dynamodb-cordon.ts';
import { DynamoDbDepartureQueues } from '../store/dynamodb-departure-queues.ts';
import { DynamoDbEntryHistory, type HistoryLost } from '../store/dynamodb-entry-history.ts';
import { DynamoDbEntryLifecycle } from '../store/dynamodb-entry-lifecycle.ts';
import { DynamoDbHeartbeatGroups } from '../store/dynamodb-heartbeat-groups.ts';
import { DynamoDbHeartbeatLanes } from '../store/dynamodb-heartbeat-lanes.ts';
import { DynamoDbHolderBeats } from '../store/dynamodb-holder-beats.ts';
import { DynamoDbInstanceIndex } from '../store/dynamodb-instance-index.ts';
import { DynamoDbSweepIndex } from '../store/dynamodb-sweep-index.ts';
import { DynamoDbSweeperState } from '../store/dynamodb-sweeper-state.ts';
import { RegistryTable } from '../store/dynamodb-table.ts';
import type { RegistrarStore } from '../store/registrar-store.ts';
import { composeAdapters, without } from './compose-adapters.ts';

export interface RegistryOptions {
  /** A deletion whose history item could not be written (functions log and count it). */
  onHistoryLost?: HistoryLost;
}

/**
 * The registry on one DynamoDB table (docs/architecture.md): every adapter, each owning its
 * keys and conditions, composed into one object (composeAdapters): the entry lifecycle (event
 * path), the sweep index, the departures, the sweeper's state, the heartbeat groups and lanes,
 * fail static's cell counters, the instance index, address claims, connection records, the
 * operators' catalog, cordons, holders' heartbeats and the entries' history. Functions that
 * need less compose less (lib/wiring/sweeper.ts, connect.ts), so their bundles carry less.
 */
export function composeRegistry(
  client: DynamoDBDocumentClient,
  tableName: string,
  options: RegistryOptions = {},
): RegistrarStore {
  const table = new RegistryTable(client, tableName);
  const history = new DynamoDbEntryHistory(client, tableName, options.onHistoryLost);
  const counters = new DynamoDbCellCounters(table);
  const connections = new DynamoDbConnectionRecords(table);
  return composeAdapters(
    new DynamoDbEntryLifecycle(table, counters, connections),
    connections,
    new DynamoDbSweepIndex(table, counters, history),
    new DynamoDbDepartureQueues(table, counters),
    new DynamoDbSweeperState(table),
    new DynamoDbHeartbeatGroups(table),
    new DynamoDbHeartbeatLanes(table),
    counters,
    new DynamoDbInstanceIndex(table, counters, history),
    new DynamoDbAddressClaims(client, tableName),
    // The lifecycle reads a group consistently (`apply` then connect is read-your-writes).
    without(new DynamoDbCatalog(client, tableName, history), 'getGroup'),
    new DynamoDbCordon(table),
    new DynamoDbHolderBeats(table),
    history,
  ) satisfies RegistrarStore;
}
