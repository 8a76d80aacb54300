import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RegistrarStore } from '../registrar-store.ts';
import { DynamoDbAddressClaims } from '../store/dynamodb-address-claims.ts';
import { DynamoDbCatalog } from '../store/dynamodb-catalog.ts';
import { DynamoDbConnectionRecords } from '../store/dynamodb-connection-records.ts';
import { DynamoDbCordon } from '../store/dynamodb-cordon.ts';
import { DynamoDbDepartureQueues } from '../store/dynamodb-departure-queues.ts';
import { DynamoDbEntryLifecycle } from '../store/dynamodb-entry-lifecycle.ts';
import { DynamoDbHeartbeatGroups } from '../store/dynamodb-heartbeat-groups.ts';
import { DynamoDbHeartbeatLanes } from '../store/dynamodb-heartbeat-lanes.ts';
import { DynamoDbHolderBeats } from '../store/dynamodb-holder-beats.ts';
import { DynamoDbInstanceIndex } from '../store/dynamodb-instance-index.ts';
import { DynamoDbSweepIndex } from '../store/dynamodb-sweep-index.ts';
import { DynamoDbSweeperState } from '../store/dynamodb-sweeper-state.ts';
import { composeAdapters, without } from './compose-adapters.ts';
import { type RegistryOptions, sharedAdapters } from './shared-adapters.ts';

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
  const { table, history, counters } = sharedAdapters(client, tableName, options);
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
