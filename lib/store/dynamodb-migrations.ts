import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { Migration } from '../registration/run-migrations.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import { EXPIRES_AT_ATTRIBUTE, TOKEN_PARTITION } from './item-codec.ts';
import { UNSHARDED_ZONE_PARTITION, ZONE_SHARDS, zonePartition } from './table-definition.ts';

/**
 * The registry table's migrations, in order. Schema 1 is what 0.1 left (no record); each
 * migration brings the table to its id. To add one: the next id, a step that pages through
 * the items it changes with Queries (never a Scan), writes each change conditionally on what
 * it read (so a page done twice changes nothing more), and `keepsOlderReaders: false` only if
 * the release before could no longer run on the result (then it is a major release, and a
 * rollback needs a restore: docs/deploy.md). The sweeper needs a grant for what it touches
 * (infra/constructs/table-access.ts).
 */
export function registryMigrations(client: DynamoDBDocumentClient, table: string): Migration[] {
  return [tokenValidityMigration(client, table), zoneCountersMigration(client, table)];
}

/** Items per page: one page is a Query and at most this many small writes. */
const PAGE = 100;

/**
 * 2: a join token's expiry in its own attribute. Tokens stored before 99b6e22 kept it in
 * `expiresAt`, the table's TTL attribute, in milliseconds (which TTL reads as a date past
 * year 50,000: they were never removed by luck of units). Every release since reads either;
 * this moves them so no token depends on that luck. Query of the TOKEN partition.
 */
function tokenValidityMigration(client: DynamoDBDocumentClient, table: string): Migration {
  return {
    id: 2,
    name: 'token-validity',
    summary: "join tokens keep their expiry in validUntil, not in the table's TTL attribute",
    keepsOlderReaders: true,
    async step(cursor) {
      const page = await client.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': TOKEN_PARTITION },
          Limit: PAGE,
          ...(cursor ? { ExclusiveStartKey: JSON.parse(cursor) } : {}),
        }),
      );
      let writes = 0;
      for (const item of page.Items ?? []) {
        const legacy = item[EXPIRES_AT_ATTRIBUTE];
        if (item.validUntil !== undefined || typeof legacy !== 'number') continue;
        writes += 1;
        try {
          await client.send(
            new UpdateCommand({
              TableName: table,
              Key: { pk: item.pk, sk: item.sk },
              UpdateExpression: 'SET validUntil = :at REMOVE #legacy',
              // Only as read: a token revoked or rewritten meanwhile is left to its writer.
              ConditionExpression: 'attribute_not_exists(validUntil) AND #legacy = :at',
              ExpressionAttributeNames: { '#legacy': EXPIRES_AT_ATTRIBUTE },
              ExpressionAttributeValues: { ':at': legacy },
            }),
          );
        } catch (error) {
          if (!isConditionFailed(error)) throw error;
        }
      }
      return nextPage(page, writes);
    },
  };
}

/**
 * 3: counters are per namespace and zone. The zone-wide counters of before (`ZONE / <zone>`,
 * and `ZONE#<shard> / <zone>` without a namespace) are read by no release since 0.1; they are
 * deleted. Queries of the 33 counter partitions, in order; the cursor names the partition.
 */
function zoneCountersMigration(client: DynamoDBDocumentClient, table: string): Migration {
  const partitions = [
    UNSHARDED_ZONE_PARTITION,
    ...Array.from({ length: ZONE_SHARDS }, (_, shard) => zonePartition(shard)),
  ];
  return {
    id: 3,
    name: 'zone-counters-per-namespace',
    summary: 'removes the zone-wide fail-static counters no release reads since 0.1',
    keepsOlderReaders: true,
    async step(cursor) {
      const at = cursor ? (JSON.parse(cursor) as { partition: number; key?: object }) : undefined;
      const index = at?.partition ?? 0;
      const partition = partitions[index] ?? UNSHARDED_ZONE_PARTITION;
      const page = await client.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': partition },
          ProjectionExpression: 'pk, sk',
          Limit: PAGE,
          ...(at?.key ? { ExclusiveStartKey: at.key } : {}),
        }),
      );
      const legacy = (page.Items ?? []).filter(
        (item) => partition === UNSHARDED_ZONE_PARTITION || !String(item.sk).includes('#'),
      );
      // Unconditional: a legacy counter is never written again, and deleting twice is a no-op.
      for (const item of legacy) {
        await client.send(
          new DeleteCommand({ TableName: table, Key: { pk: item.pk, sk: item.sk } }),
        );
      }
      const items = page.Items?.length ?? 0;
      if (page.LastEvaluatedKey) {
        return {
          cursor: JSON.stringify({ partition: index, key: page.LastEvaluatedKey }),
          items,
          writes: legacy.length,
        };
      }
      if (index + 1 < partitions.length) {
        return { cursor: JSON.stringify({ partition: index + 1 }), items, writes: legacy.length };
      }
      return { items, writes: legacy.length };
    },
  };
}

function nextPage(
  page: { Items?: unknown[]; LastEvaluatedKey?: Record<string, unknown> },
  writes: number,
): { cursor?: string; items: number; writes: number } {
  const items = page.Items?.length ?? 0;
  return page.LastEvaluatedKey
    ? { cursor: JSON.stringify(page.LastEvaluatedKey), items, writes }
    : { items, writes };
}
