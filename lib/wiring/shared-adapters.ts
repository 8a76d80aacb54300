import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbCellCounters } from '../store/dynamodb-cell-counters.ts';
import { DynamoDbEntryHistory, type HistoryLost } from '../store/dynamodb-entry-history.ts';
import { RegistryTable } from '../store/dynamodb-table.ts';

// Its own module: a function's bundle carries every module its wiring imports (esbuild keeps
// them, used or not), so the sweeper's and connect's compositions must not import registry.ts.

export interface RegistryOptions {
  /** A deletion whose history item could not be written (functions log and count it). */
  onHistoryLost?: HistoryLost;
}

/**
 * What several adapters share: the table, the deleted entries' history (a deletion records
 * it), the cell counters (a connect, a leave and a deletion count). One each per composition.
 */
export function sharedAdapters(
  client: DynamoDBDocumentClient,
  tableName: string,
  options: RegistryOptions = {},
) {
  const table = new RegistryTable(client, tableName);
  return {
    table,
    history: new DynamoDbEntryHistory(client, tableName, options.onHistoryLost),
    counters: new DynamoDbCellCounters(table),
  };
}
