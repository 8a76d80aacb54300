import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SweepStore } from '../registration/sweep-options.ts';
import { DynamoDbConnectionRecords } from '../store/dynamodb-connection-records.ts';
import { DynamoDbDepartureQueues } from '../store/dynamodb-departure-queues.ts';
import { DynamoDbEntryLifecycle } from '../store/dynamodb-entry-lifecycle.ts';
import { DynamoDbHeartbeatGroups } from '../store/dynamodb-heartbeat-groups.ts';
import { DynamoDbHeartbeatLanes } from '../store/dynamodb-heartbeat-lanes.ts';
import { DynamoDbSweepIndex } from '../store/dynamodb-sweep-index.ts';
import { DynamoDbSweeperState } from '../store/dynamodb-sweeper-state.ts';
import type { SweepLeaseStore } from '../sweep/sweep-lease-store.ts';
import { composeAdapters } from './compose-adapters.ts';
import { type RegistryOptions, sharedAdapters } from './shared-adapters.ts';

/** What the sweeper function asks of the registry: the sweep (with fail static), its lease. */
export type SweeperStore = SweepStore & SweepLeaseStore;

/**
 * The registry as the sweeper function uses it: the adapters these calls need and none of the
 * others (catalog, cordon, instance index, address claims), so the sweeper's bundle carries
 * only these (issue 27).
 */
export function sweeperStore(
  client: DynamoDBDocumentClient,
  tableName: string,
  options: RegistryOptions = {},
): SweeperStore {
  const { table, history, counters } = sharedAdapters(client, tableName, options);
  return composeAdapters(
    // For dropHolders: a liveness check's or a silent holder's drop.
    new DynamoDbEntryLifecycle(table, counters, new DynamoDbConnectionRecords(table)),
    new DynamoDbSweepIndex(table, counters, history),
    new DynamoDbDepartureQueues(table, counters),
    new DynamoDbSweeperState(table),
    new DynamoDbHeartbeatGroups(table),
    new DynamoDbHeartbeatLanes(table),
    counters,
  ) satisfies SweeperStore;
}
