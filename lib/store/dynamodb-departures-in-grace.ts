import type { EpochMillis } from '../domain/model.ts';
import type { DeparturesInGrace } from '../registration/sweep-store.ts';
import { queryItems } from './dynamodb-client.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { namespaceSweepState, sweepState } from './item-codec.ts';
import { SWEEP_INDEX, SWEEP_SHARDS } from './table-definition.ts';

/**
 * The departed entries a sweep leaves because they are still within their grace period
 * (disconnected after `disconnectedAfter`), for `registrar sweep`'s summary: without it, "0
 * deleted" cannot tell an empty registry from a VM that will be deleted in four minutes.
 *
 * Read from the sweep index only (each namespace's `L#`/`D#` keys and release 0.1.0's shared
 * ones), the `sweepAt` attribute alone, at most `limit` items in all: an operator's command,
 * never the sweeper's path.
 */
export async function departuresInGrace(
  table: RegistryTable,
  namespaces: readonly string[],
  disconnectedAfter: EpochMillis,
  limit: number,
): Promise<DeparturesInGrace> {
  const keys: string[] = [];
  for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
    for (const kind of ['L', 'D'] as const) {
      keys.push(sweepState(kind, shard));
      for (const namespace of namespaces) keys.push(namespaceSweepState(kind, namespace, shard));
    }
  }
  let count = 0;
  let first: EpochMillis | undefined;
  for (const key of keys) {
    const items = queryItems(
      table.client,
      {
        TableName: table.name,
        IndexName: SWEEP_INDEX.name,
        KeyConditionExpression: 'sweepState = :state AND sweepAt > :from',
        ExpressionAttributeValues: { ':state': key, ':from': disconnectedAfter },
        ProjectionExpression: 'sweepAt',
      },
      limit - count + 1,
    );
    for await (const item of items) {
      const at = Number(item.sweepAt);
      if (first === undefined || at < first) first = at;
      count += 1;
      if (count > limit) return { count: limit, more: true, firstDisconnectedAt: first };
    }
  }
  return { count, more: false, ...(first !== undefined ? { firstDisconnectedAt: first } : {}) };
}
