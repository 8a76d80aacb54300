import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RegisterWorkloadStore } from '../registration/register-workload.ts';
import { DynamoDbAddressClaims } from '../store/dynamodb-address-claims.ts';
import { DynamoDbConnectionRecords } from '../store/dynamodb-connection-records.ts';
import { DynamoDbEntryLifecycle } from '../store/dynamodb-entry-lifecycle.ts';
import { DynamoDbSweepIndex } from '../store/dynamodb-sweep-index.ts';
import { composeAdapters } from './compose-adapters.ts';
import { type RegistryOptions, sharedAdapters } from './shared-adapters.ts';

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
): RegisterWorkloadStore {
  const { table, history, counters } = sharedAdapters(client, tableName, options);
  return composeAdapters(
    new DynamoDbEntryLifecycle(table, counters, new DynamoDbConnectionRecords(table)),
    new DynamoDbAddressClaims(client, tableName),
    new DynamoDbSweepIndex(table, counters, history),
  ) satisfies RegisterWorkloadStore;
}
