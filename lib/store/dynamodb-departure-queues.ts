import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { cellKey, type ZoneCount, zoneOf } from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { mergeOrdered } from '../domain/merge-ordered.ts';
import type { EpochMillis } from '../domain/model.ts';
import type {
  AwayCount,
  DepartureKey,
  DepartureStore,
  DeparturesInGrace,
} from '../registration/sweep-store.ts';
import type { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { queryItems } from './dynamodb-client.ts';
import { departuresInGrace } from './dynamodb-departures-in-grace.ts';
import { DynamoDbNamespaceIndex } from './dynamodb-namespace-index.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { decodeEntry, type Item, namespaceSweepState, sweepState } from './item-codec.ts';
import { SWEEP_INDEX, SWEEP_SHARDS } from './table-definition.ts';

/**
 * The first page of a namespace's queue asks for this many items per shard, each next page
 * four times as many up to PAGE_MAX: an idle namespace costs one empty page per shard, a
 * backlog is read in a few pages, and a queue the run leaves early was read little past
 * what it used.
 */
const PAGE_FIRST = 16;
const PAGE_MAX = 256;

/**
 * Each namespace's departures in the sweep index (`L#<namespace>#<shard>`,
 * `D#<namespace>#<shard>`; item-codec.ts): the per-namespace queues of the fair sweeper, the
 * namespaces it looks in, and the recount of the entries away that fail static trusts over
 * its counters.
 */
export class DynamoDbDepartureQueues implements DepartureStore {
  readonly #table: RegistryTable;
  readonly #namespaces: DynamoDbNamespaceIndex;
  readonly #counters: DynamoDbCellCounters;

  constructor(table: RegistryTable, counters: DynamoDbCellCounters) {
    this.#table = table;
    this.#namespaces = new DynamoDbNamespaceIndex(table.client, table.name);
    this.#counters = counters;
  }

  /**
   * The namespaces that may hold departures: the namespace index (one Query), which holds
   * every namespace a group was applied to (an entry is auto-registered only into a group),
   * and the namespaces of the cell counters (every connect that creates an entry counts it),
   * read here unless the caller read them already: each covers what the other may miss (a
   * table whose namespace index is not complete yet, a counter write that failed).
   */
  async sweepNamespaces(counted?: readonly ZoneCount[]): Promise<string[]> {
    const [index, cells] = await Promise.all([
      this.#namespaces.list(),
      counted ?? this.#counters.zoneCounts(),
    ]);
    return [...new Set([...index.namespaces, ...cells.map((cell) => cell.namespace)])].sort();
  }

  /** See departuresInGrace: every namespace's, and 0.1.0's shared keys. */
  async departuresInGrace(
    disconnectedAfter: EpochMillis,
    limit: number,
  ): Promise<DeparturesInGrace> {
    return departuresInGrace(this.#table, await this.sweepNamespaces(), disconnectedAfter, limit);
  }

  /** See moveDeparturesToSharedKeys: every namespace's, for a rollback to 0.1.0. */
  async moveDeparturesToSharedKeys(limit?: number): Promise<{ moved: number; more: boolean }> {
    return moveDeparturesToSharedKeys(this.#table, await this.sweepNamespaces(), limit);
  }

  /**
   * One namespace's departures of one kind disconnected at or before the cutoff, oldest first:
   * its four shards read side by side, merged, each a page at a time (pages grow, see
   * PAGE_FIRST). A shard whose read fails ends there, told to `onReadFailure` (or thrown).
   */
  departuresOf(
    namespace: string,
    kind: DepartureKey,
    disconnectedAtOrBefore: EpochMillis,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord> {
    const shards = Array.from({ length: SWEEP_SHARDS }, (_, shard) =>
      isolated(
        growingPages(this.#table, {
          TableName: this.#table.name,
          IndexName: SWEEP_INDEX.name,
          KeyConditionExpression: 'sweepState = :state AND sweepAt <= :to',
          ExpressionAttributeValues: {
            ':state': namespaceSweepState(kind, namespace, shard),
            ':to': disconnectedAtOrBefore,
          },
        }),
        onReadFailure,
      ),
    );
    return decoded(mergeOrdered(shards, (item) => Number(item.sweepAt)));
  }

  /**
   * The entries away after an abnormal departure, counted by cell from the index itself (the
   * counters can drift; this cannot): 0.1.0's shared `D#<shard>` keys, then each of the given
   * namespaces' own keys (fewest away first), reading at most `limit` items in all. The
   * namespace whose keys would take the count past `limit`, and those after it, are left out
   * of `namespaces` (their counters stand); undefined
   * when the shared keys alone hold more than `limit`. Only the key and the locality are
   * returned (the read is billed by item size all the same).
   */
  async awayByZone(
    limit: number,
    namespaces: readonly string[] = [],
  ): Promise<AwayCount | undefined> {
    const byCell: Record<string, number> = {};
    let budget = limit;
    const count = async (keys: string[]) => {
      const found: Record<string, number> = {};
      let seen = 0;
      for (const key of keys) {
        const items = queryItems(
          this.#table.client,
          awayQuery(this.#table.name, key),
          budget - seen + 1,
        );
        for await (const item of items) {
          seen += 1;
          if (seen > budget) return undefined;
          const cell = cellOf(item);
          found[cell] = (found[cell] ?? 0) + 1;
        }
      }
      budget -= seen;
      return found;
    };
    const legacy = await count(shardKeys((shard) => sweepState('D', shard)));
    if (!legacy) return undefined;
    add(byCell, legacy);
    const counted = new Set<string>();
    for (const namespace of namespaces) {
      const own = await count(shardKeys((shard) => namespaceSweepState('D', namespace, shard)));
      // Fewest away first: the ones after this one would not fit either.
      if (!own) break;
      add(byCell, own);
      counted.add(namespace);
    }
    return { byCell, namespaces: counted };
  }
}

/**
 * Moves this release's departures back to the keys release 0.1.0 reads (`L#<shard>`,
 * `D#<shard>`, the same shard), for a rollback: 0.1.0's sweeper never reads a namespace's own
 * keys, and would keep those entries forever. One conditional write each (on the key it read:
 * an entry that reconnected, was swept or moved meanwhile is left alone), nothing else of the
 * entry changes (its revision neither: no sweep or connect loses to it). Idempotent and
 * resumable: a moved entry no longer matches, so a run cut short is run again. Stops after
 * `limit` moves; `more` says whether some may be left.
 */
export async function moveDeparturesToSharedKeys(
  table: RegistryTable,
  namespaces: readonly string[],
  limit = Number.POSITIVE_INFINITY,
): Promise<{ moved: number; more: boolean }> {
  let moved = 0;
  for (const namespace of namespaces) {
    for (const kind of ['L', 'D'] as const) {
      for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
        const from = namespaceSweepState(kind, namespace, shard);
        const items = queryItems(table.client, {
          TableName: table.name,
          IndexName: SWEEP_INDEX.name,
          KeyConditionExpression: 'sweepState = :state',
          ExpressionAttributeValues: { ':state': from },
          ProjectionExpression: 'pk, sk',
        });
        for await (const item of items) {
          if (moved >= limit) return { moved, more: true };
          await table.tryUpdate({
            TableName: table.name,
            Key: { pk: String(item.pk), sk: String(item.sk) },
            UpdateExpression: 'SET sweepState = :to',
            ConditionExpression: 'sweepState = :from',
            ExpressionAttributeValues: { ':from': from, ':to': sweepState(kind, shard) },
          });
          moved += 1;
        }
      }
    }
  }
  return { moved, more: false };
}

function shardKeys(key: (shard: number) => string): string[] {
  return Array.from({ length: SWEEP_SHARDS }, (_, shard) => key(shard));
}

function awayQuery(tableName: string, key: string): QueryCommandInput {
  return {
    TableName: tableName,
    IndexName: SWEEP_INDEX.name,
    KeyConditionExpression: 'sweepState = :state',
    ExpressionAttributeValues: { ':state': key },
    ProjectionExpression: 'pk, #entry.spec.locality',
    ExpressionAttributeNames: { '#entry': 'entry' },
  };
}

function cellOf(item: Item): string {
  const locality = (item.entry as { spec?: { locality?: string } } | undefined)?.spec?.locality;
  const pk = String(item.pk);
  return cellKey(pk.slice(pk.indexOf('#') + 1), zoneOf(locality));
}

function add(into: Record<string, number>, counts: Record<string, number>): void {
  for (const [cell, n] of Object.entries(counts)) into[cell] = (into[cell] ?? 0) + n;
}

/** Every item of a Query, in pages of PAGE_FIRST items growing fourfold up to PAGE_MAX. */
async function* growingPages(table: RegistryTable, input: QueryCommandInput): AsyncIterable<Item> {
  let size = PAGE_FIRST;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await table.client.send(
      new QueryCommand({
        ...input,
        Limit: size,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    yield* page.Items ?? [];
    startKey = page.LastEvaluatedKey;
    size = Math.min(PAGE_MAX, size * 4);
  } while (startKey);
}

/** The items of one shard's query; a failed read ends it, told to `onReadFailure` if given. */
export async function* isolated<T>(
  items: AsyncIterable<T>,
  onReadFailure: ((error: unknown) => void) | undefined,
): AsyncIterable<T> {
  try {
    yield* items;
  } catch (error) {
    if (!onReadFailure) throw error;
    onReadFailure(error);
  }
}

async function* decoded(items: AsyncIterable<Item>): AsyncIterable<EntryRecord> {
  for await (const item of items) yield decodeEntry(item);
}
