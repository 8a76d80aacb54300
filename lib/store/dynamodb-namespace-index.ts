import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { NamespaceList } from '../registration/catalog-store.ts';
import { queryItems, scanItems } from './dynamodb-client.ts';
import { namespacePartition } from './item-codec.ts';
import { PARTITIONS } from './table-definition.ts';

/**
 * The sort key of the marker that says every namespace holding items is indexed. A namespace
 * is a DNS-1123 label (lower case, digits, '-'), so '#' never collides with one.
 */
export const NAMESPACE_INDEX_COMPLETE = '#complete';

export function namespaceIndexKey(namespace: string): { pk: string; sk: string } {
  return { pk: PARTITIONS.namespaceIndex, sk: namespace };
}

/**
 * The namespaces that hold groups or entries, one item each in one partition (`NAMESPACES /
 * <namespace>`), so listing every namespace is one Query, never a Scan of the table.
 *
 * Written on the operator's path only (apply of a group or a hand-made entry): an entry is
 * auto-registered only into a group, so its namespace was indexed when the group was applied,
 * and connect, disconnect and health never write here. One partition is enough: it takes a
 * write per `registrar apply`, far under DynamoDB's 1,000 writes/s per key.
 *
 * Never removed, not even when a namespace's last group and entry are gone: removing it would
 * race an apply into the same namespace, and a namespace missing from the index is one whose
 * projected objects the full reconcile would delete from the cluster. An emptied namespace
 * costs one empty Query per full reconcile.
 */
export class DynamoDbNamespaceIndex {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  /**
   * Adds the namespace (idempotent: an unconditional put of the same key). Called before the
   * group or entry is written, so no item of the namespace exists unindexed: a crash between
   * the two leaves an indexed namespace with nothing in it, which costs one empty Query.
   */
  async record(namespace: string): Promise<void> {
    await this.#client.send(
      new PutCommand({ TableName: this.#table, Item: namespaceIndexKey(namespace) }),
    );
  }

  /** One Query of the index partition (paged); consistent, so an apply just made is seen. */
  async list(): Promise<NamespaceList> {
    const namespaces: string[] = [];
    let complete = false;
    const items = queryItems(this.#client, {
      TableName: this.#table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': PARTITIONS.namespaceIndex },
      ConsistentRead: true,
    });
    for await (const item of items) {
      const sk = String(item.sk);
      if (sk === NAMESPACE_INDEX_COMPLETE) complete = true;
      else namespaces.push(sk);
    }
    return { namespaces, complete };
  }

  /**
   * Marks the index complete: every namespace with items is in it. A new table is complete
   * from the start (ensureTable marks it); a table from before the index is marked by
   * `backfill`.
   */
  async markComplete(): Promise<void> {
    await this.#client.send(
      new PutCommand({
        TableName: this.#table,
        Item: namespaceIndexKey(NAMESPACE_INDEX_COMPLETE),
      }),
    );
  }

  /**
   * The upgrade path for a table written before the index: one Scan of the keys (only `pk` is
   * returned), every namespace found recorded, then the marker, last, so a backfill cut short
   * is simply run again. Operator credentials only (the CLI's first listing across
   * namespaces): no function may Scan the table. Returns the namespaces found, sorted.
   *
   * An operator who may read but not write the table still gets the listing: the index then
   * stays incomplete, and the next listing scans again, as every listing did before the index.
   */
  async backfill(): Promise<string[]> {
    const prefix = namespacePartition('');
    const found = new Set<string>();
    const keys = scanItems(this.#client, {
      TableName: this.#table,
      ProjectionExpression: 'pk',
      FilterExpression: 'begins_with(pk, :ns)',
      ExpressionAttributeValues: { ':ns': prefix },
    });
    for await (const key of keys) found.add(String(key.pk).slice(prefix.length));
    const namespaces = [...found].sort();
    try {
      for (const namespace of namespaces) await this.record(namespace);
      await this.markComplete();
    } catch (error) {
      if ((error as { name?: unknown }).name !== 'AccessDeniedException') throw error;
    }
    return namespaces;
  }
}
