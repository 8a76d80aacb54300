import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RolloutStore } from '../rollout/rollout-store.ts';
import { DynamoDbEntryHistory } from '../store/dynamodb-entry-history.ts';
import { DynamoDbRolloutEntries } from '../store/dynamodb-rollout-entries.ts';
import { DynamoDbRolloutRecords } from '../store/dynamodb-rollout-records.ts';
import { RegistryTable } from '../store/dynamodb-table.ts';
import { composeAdapters } from './compose-adapters.ts';

/**
 * Template rollouts on the registry table: the rollout records and the group's entries, two
 * adapters bound into the one RolloutStore the rollout function, the group sync, the CLI and
 * the dashboard take.
 */
export function composeRollouts(client: DynamoDBDocumentClient, tableName: string): RolloutStore {
  const table = new RegistryTable(client, tableName);
  return composeAdapters(
    new DynamoDbRolloutRecords(table),
    new DynamoDbRolloutEntries(table, new DynamoDbEntryHistory(client, tableName)),
  ) satisfies RolloutStore;
}
