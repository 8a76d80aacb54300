import { DeleteCommand, type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Migration } from '../registration/schema-store.ts';
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
  return [zoneCountersMigration(client, table)];
}

/** Items per page: one page is a Query and at most this many small writes. */
const PAGE = 100;

/**
 * 2: counters are per namespace and zone. The zone-wide counters of before (`ZONE / <zone>`,
 * and `ZONE#<shard> / <zone>` without a namespace) are read by no release since 0.1; they are
 * deleted. Queries of the 33 counter partitions, in order; the cursor names the partition.
 */
function zoneCountersMigration(client: DynamoDBDocumentClient, table: string): Migration {
  const partitions = [
    UNSHARDED_ZONE_PARTITION,
    ...Array.from({ length: ZONE_SHARDS }, (_, shard) => zonePartition(shard)),
  ];
  return {
    id: 2,
    name: 'zone-counters-per-namespace',
    summary: 'removes the zone-wide fail-static counters no release reads since 0.1',
    keepsOlderReaders: true,
    async step(cursor) {
      // Several small partitions to a page: one Query each, until a page's worth is read.
      let at = cursor ? (JSON.parse(cursor) as { partition: number; key?: object }) : undefined;
      let items = 0;
      let writes = 0;
      for (let index = at?.partition ?? 0; index < partitions.length; index++) {
        const partition = partitions[index] ?? UNSHARDED_ZONE_PARTITION;
        const page = await client.send(
          new QueryCommand({
            TableName: table,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': partition },
            ProjectionExpression: 'pk, sk',
            Limit: PAGE - items,
            ...(at?.key ? { ExclusiveStartKey: at.key } : {}),
          }),
        );
        at = undefined;
        const legacy = (page.Items ?? []).filter(
          (item) => partition === UNSHARDED_ZONE_PARTITION || !String(item.sk).includes('#'),
        );
        // Unconditional: a legacy counter is never written again; deleting twice is a no-op.
        for (const item of legacy) {
          await client.send(
            new DeleteCommand({ TableName: table, Key: { pk: item.pk, sk: item.sk } }),
          );
        }
        items += page.Items?.length ?? 0;
        writes += legacy.length;
        if (page.LastEvaluatedKey) {
          return {
            cursor: JSON.stringify({ partition: index, key: page.LastEvaluatedKey }),
            items,
            writes,
          };
        }
        if (items >= PAGE && index + 1 < partitions.length) {
          return { cursor: JSON.stringify({ partition: index + 1 }), items, writes };
        }
      }
      return { items, writes };
    },
  };
}
