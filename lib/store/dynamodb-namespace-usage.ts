import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { cellKey } from '../domain/disruption.ts';
import type { NamespaceUsageReader } from '../registration/namespace-usage-reader.ts';
import { queryItems } from './dynamodb-client.ts';
import { namespaceZoneShards, zonePartition } from './table-definition.ts';

/**
 * A namespace's connected entries, summed from fail static's cell counters
 * (lib/store/dynamodb-cell-counters.ts): the entry writes already keep them, so the quota adds
 * no write. One Query of each partition the namespace's cells live in (CELL_SPREAD of them),
 * for the sort keys `<namespace>#...`: items read grow with the namespace's zones, never with
 * its entries. Eventually consistent (half a read unit per 4 KB): the caller caches it anyway.
 */
export class DynamoDbNamespaceUsage implements NamespaceUsageReader {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async connectedEntries(namespace: string): Promise<number> {
    const counts = await Promise.all(
      namespaceZoneShards(namespace).map(async (shard) => {
        let sum = 0;
        const items = queryItems(this.#client, {
          TableName: this.#table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :cells)',
          ExpressionAttributeValues: {
            ':pk': zonePartition(shard),
            ':cells': cellKey(namespace, ''),
          },
          ProjectionExpression: 'connected',
        });
        for await (const item of items) {
          if (typeof item.connected === 'number') sum += item.connected;
        }
        return sum;
      }),
    );
    // A counter that drifted below zero (a lost move) must not make room for more.
    return Math.max(
      0,
      counts.reduce((a, b) => a + b, 0),
    );
  }
}
