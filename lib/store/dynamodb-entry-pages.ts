import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { FirstEntriesReader } from '../dashboard-server/first-entries-reader.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { queryItems } from './dynamodb-client.ts';
import { decodeEntry, ENTRY_PREFIX, namespacePartition } from './item-codec.ts';

/**
 * The first entries of a namespace by name, as the table keeps them (its sort key order): one
 * Query of `limit` items, whatever the namespace's size. `registrar dashboard` shows them while it
 * reads the rest of a large namespace (a 20,000-entry namespace is some 30 Query pages).
 */
export class DynamoDbEntryPages implements FirstEntriesReader {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async firstEntries(namespace: string, limit: number): Promise<EntryRecord[]> {
    const records: EntryRecord[] = [];
    const items = queryItems(
      this.#client,
      {
        TableName: this.#table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: {
          ':pk': namespacePartition(namespace),
          ':prefix': ENTRY_PREFIX,
        },
      },
      limit,
    );
    for await (const item of items) records.push(decodeEntry(item));
    return records;
  }
}
