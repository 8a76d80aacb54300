import { BatchWriteCommand, type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { type EntryEvent, EVENT_RETENTION_MS } from '../domain/entry-events.ts';
import { entryHistory } from '../domain/entry-history.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { DeletedEntryHistory, EntryHistoryStore } from '../registration/entry-event-store.ts';
import { queryItems } from './dynamodb-client.ts';
import { decodeEvents, encodeEvent, type StoredEvent } from './event-codec.ts';
import { decodeEntry, EXPIRES_AT_ATTRIBUTE, type Item, namespacePartition } from './item-codec.ts';

/**
 * What is left of a deleted entry: its events up to and including the deletion, kept in an
 * item of its own that outlives the entry by EVENT_RETENTION_MS, so "why did my VM leave the
 * mesh" has an answer after the entry is gone.
 *
 * Key: `NS#<namespace>` / `EV#<name>#<deletedAt>`, the partition of the entry itself: the
 * history put lands where the entry's delete just did, so no key is written by more of the
 * fleet than before (a namespace's deletions are paced by the sweeper, 50/s by default).
 * Expires by the table's TTL (`expiresAt`, epoch seconds). TTL deletes within days after the
 * expiry and dynalite has none: reads skip expired items, and the local runtime prunes them
 * (pruneExpired, a bounded number each sweep interval).
 */
export const HISTORY_PREFIX = 'EV#';

type HistoryItem = {
  pk: string;
  sk: string;
  name: string;
  deletedAt: EpochMillis;
  group?: string;
  address?: string;
  events: StoredEvent[];
  [EXPIRES_AT_ATTRIBUTE]: number;
};

// 15 digits keep the sort key in time order for every epoch millisecond until year 33658.
const historySortKey = (name: string, at?: EpochMillis) =>
  `${HISTORY_PREFIX}${name}#${at === undefined ? '' : String(at).padStart(15, '0')}`;

/** The key of the history item of the entry deleted at `at`. */
export function historyKey(ref: ObjectRef, at: EpochMillis): { pk: string; sk: string } {
  return { pk: namespacePartition(ref.namespace), sk: historySortKey(ref.name, at) };
}

/** Deletions are recorded, listed and (locally) pruned here; see the file comment. */
/** Told when a deletion's history item could not be written (the composition root logs it). */
export type HistoryLost = (ref: ObjectRef, deletion: EntryEvent, error: unknown) => void;

export class DynamoDbEntryHistory implements EntryHistoryStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  readonly #onLost: HistoryLost | undefined;

  constructor(client: DynamoDBDocumentClient, tableName: string, onLost?: HistoryLost) {
    this.#client = client;
    this.#table = tableName;
    this.#onLost = onLost;
  }

  /**
   * Records the deletion of the entry whose last state was `old` (the delete's ALL_OLD, or the
   * record it was conditional on). One PutItem, not conditional: the SDK's retry writes the
   * same item again. Best effort: the deletion stands whether or not its record is written;
   * false says it was not.
   */
  async recordDeletion(old: Item, deletion: EntryEvent): Promise<boolean> {
    const record = decodeEntry(old);
    const ref = record.entry.metadata;
    const events = [...entryHistory(record, deletion.at), deletion];
    const item: HistoryItem = {
      ...historyKey(ref, deletion.at),
      name: ref.name,
      deletedAt: deletion.at,
      events: events.map(encodeEvent),
      [EXPIRES_AT_ATTRIBUTE]: Math.ceil((deletion.at + EVENT_RETENTION_MS) / 1000),
    };
    if (record.autoRegistrationGroup !== undefined) item.group = record.autoRegistrationGroup;
    if (record.entry.spec.address !== undefined) item.address = record.entry.spec.address;
    try {
      await this.#client.send(new PutCommand({ TableName: this.#table, Item: item }));
      return true;
    } catch (error) {
      // The deletion stands; "why did it leave" loses its answer, so it is said and counted.
      this.#onLost?.(ref, deletion, error);
      return false;
    }
  }

  /** The deleted entries of a namespace (of one name, when given) not expired at `now`. */
  async deletedEntries(namespace: string, name: string | undefined, now: EpochMillis) {
    const found: DeletedEntryHistory[] = [];
    const items = queryItems(this.#client, {
      TableName: this.#table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: {
        ':pk': namespacePartition(namespace),
        ':prefix': name === undefined ? HISTORY_PREFIX : historySortKey(name),
      },
    });
    for await (const raw of items) {
      const item = raw as HistoryItem;
      if (isExpired(item, now)) continue;
      const history: DeletedEntryHistory = {
        ref: { namespace, name: item.name },
        deletedAt: item.deletedAt,
        events: decodeEvents(item.events),
      };
      if (item.group !== undefined) history.group = item.group;
      if (item.address !== undefined) history.address = item.address;
      found.push(history);
    }
    return found;
  }

  /**
   * Deletes expired history items of these namespaces, at most `limit` (where the table has no
   * TTL: dynalite, DynamoDB Local). Reads only the namespaces' history items (their keys).
   */
  async pruneExpiredHistory(
    namespaces: readonly string[],
    now: EpochMillis,
    limit: number,
  ): Promise<number> {
    const expired: { pk: string; sk: string }[] = [];
    for (const namespace of namespaces) {
      const items = queryItems(this.#client, {
        TableName: this.#table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        FilterExpression: '#expires < :now',
        ProjectionExpression: 'pk, sk',
        ExpressionAttributeNames: { '#expires': EXPIRES_AT_ATTRIBUTE },
        ExpressionAttributeValues: {
          ':pk': namespacePartition(namespace),
          ':prefix': HISTORY_PREFIX,
          ':now': Math.floor(now / 1000),
        },
      });
      for await (const item of items) {
        expired.push({ pk: String(item.pk), sk: String(item.sk) });
        if (expired.length >= limit) break;
      }
      if (expired.length >= limit) break;
    }
    for (let start = 0; start < expired.length; start += 25) {
      const batch = expired.slice(start, start + 25).map((Key) => ({ DeleteRequest: { Key } }));
      // Unprocessed deletes are left for the next run: pruning is never urgent.
      await this.#client.send(new BatchWriteCommand({ RequestItems: { [this.#table]: batch } }));
    }
    return expired.length;
  }
}

function isExpired(item: HistoryItem, now: EpochMillis): boolean {
  const expires = item[EXPIRES_AT_ATTRIBUTE];
  return typeof expires === 'number' && expires * 1000 <= now;
}
