import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RegistrarStore } from '../registrar-store.ts';
import { reportHistoryLost } from './history-lost.ts';
import { composeRegistry } from './registry.ts';

/**
 * The registry over the table, as every function builds it: a deletion whose history item
 * cannot be written is logged and counted (fault HistoryNotRecorded), never silent.
 */
export function registryStore(client: DynamoDBDocumentClient, tableName: string): RegistrarStore {
  return composeRegistry(client, tableName, { onHistoryLost: reportHistoryLost });
}
