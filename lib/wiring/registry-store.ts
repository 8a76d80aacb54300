import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { countFault, logger } from '../observability.ts';
import { DynamoDbRegistryStore } from '../store/dynamodb-registry-store.ts';

/**
 * The registry over the table, as every function builds it: a deletion whose history item
 * cannot be written is logged and counted (fault HistoryNotRecorded), never silent.
 */
export function registryStore(
  client: DynamoDBDocumentClient,
  tableName: string,
): DynamoDbRegistryStore {
  return new DynamoDbRegistryStore(client, tableName, {
    onHistoryLost: (ref, deletion, error) => {
      logger.warn('the deletion of an entry was not recorded in its history', {
        entry: `${ref.namespace}/${ref.name}`,
        reason: deletion.reason,
        cause: error instanceof Error ? error.message : String(error),
      });
      countFault('HistoryNotRecorded');
    },
  });
}
