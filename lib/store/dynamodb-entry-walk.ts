import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { namespaceIndexKey } from './dynamodb-namespace-index.ts';
import { ENTRY_PREFIX, namespacePartition } from './item-codec.ts';
import { PARTITIONS } from './table-definition.ts';

/**
 * Every WorkloadEntry item of the table, a page at a time, with a cursor a migration saves
 * between pages: the namespace index says which partitions hold entries, and each is a Query
 * of its `WE#` items, so no Scan reads groups, tokens, counters or claims. For a migration
 * that changes entries (lib/registration/run-migrations.ts); its cost at 100,000 VMs is in
 * docs/benchmarks.md ("Migrations").
 *
 * The cursor names the namespace and the last key read in it. A namespace applied between two
 * pages is visited when the pages reach it in name order; entries created meanwhile in a
 * namespace already passed are written by code that already writes the new shape.
 */
export interface EntryPage {
  items: Record<string, unknown>[];
  /** Where the next page starts; absent after the last page. */
  cursor?: string;
}

interface Position {
  namespace: string;
  key?: Record<string, unknown>;
}

export async function entryPage(
  client: DynamoDBDocumentClient,
  table: string,
  cursor: string | undefined,
  limit = 100,
): Promise<EntryPage> {
  let position = cursor ? (JSON.parse(cursor) as Position) : await firstNamespace(client, table);
  for (;;) {
    if (!position) return { items: [] };
    const page = await client.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :we)',
        ExpressionAttributeValues: {
          ':pk': namespacePartition(position.namespace),
          ':we': ENTRY_PREFIX,
        },
        Limit: limit,
        ...(position.key ? { ExclusiveStartKey: position.key } : {}),
      }),
    );
    const items = page.Items ?? [];
    const next = page.LastEvaluatedKey
      ? { namespace: position.namespace, key: page.LastEvaluatedKey }
      : await namespaceAfter(client, table, position.namespace);
    // An empty namespace yields an empty page: go on to the next instead of returning none.
    if (items.length === 0 && next) {
      position = next;
      continue;
    }
    return next ? { items, cursor: JSON.stringify(next) } : { items };
  }
}

function firstNamespace(client: DynamoDBDocumentClient, table: string) {
  return namespaceAfter(client, table, undefined);
}

/** The next namespace of the index in name order (one small Query); `#complete` is no name. */
async function namespaceAfter(
  client: DynamoDBDocumentClient,
  table: string,
  after: string | undefined,
): Promise<Position | undefined> {
  const page = await client.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: after === undefined ? 'pk = :pk' : 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: {
        ':pk': PARTITIONS.namespaceIndex,
        ...(after === undefined ? {} : { ':after': namespaceIndexKey(after).sk }),
      },
      ConsistentRead: true,
      Limit: 2,
    }),
  );
  const found = (page.Items ?? []).map((item) => String(item.sk)).find((sk) => !sk.startsWith('#'));
  return found === undefined ? undefined : { namespace: found };
}
