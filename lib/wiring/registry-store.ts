import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbRegistryStore } from '../store/dynamodb-registry-store.ts';
import { reportHistoryLost } from './history-lost.ts';

/**
 * The registry over the table, as every function builds it: a deletion whose history item
 * cannot be written is logged and counted (fault HistoryNotRecorded), never silent.
 */
export function registryStore(
  client: DynamoDBDocumentClient,
  tableName: string,
): DynamoDbRegistryStore {
  return new DynamoDbRegistryStore(client, tableName, { onHistoryLost: reportHistoryLost });
}
