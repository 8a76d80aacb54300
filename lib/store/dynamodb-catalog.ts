import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import {
  BatchWriteCommand,
  type BatchWriteCommandOutput,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { deletedEvent, EVENTS_KEPT, entryEvent } from '../domain/entry-events.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { ConflictError, InvalidRequestError } from '../domain/errors.ts';
import { HEARTBEAT_ANNOTATIONS } from '../domain/heartbeat.ts';
import {
  formatRef,
  type ObjectRef,
  type WorkloadEntry,
  type WorkloadGroup,
} from '../domain/model.ts';
import { type Forgery, forgedEntryState, forgedGroupState } from '../domain/registrar-state.ts';
import type { EntryDeletion, StoredGroup } from '../domain/registry-records.ts';
import type { SizeRefusal } from '../protocol/document-size-limits.ts';
import type { CatalogDocumentStore, NamespaceList } from '../registration/catalog-store.ts';
import { entrySizeRefusal, groupSizeRefusal } from './catalog-item-limits.ts';
import { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import { DynamoDbEntryHistory } from './dynamodb-entry-history.ts';
import { heartbeatChangeUpdate } from './dynamodb-heartbeat-changes.ts';
import { DynamoDbNamespaceIndex } from './dynamodb-namespace-index.ts';
import { RegistryTable } from './dynamodb-table.ts';
import { encodeEvent } from './event-codec.ts';
import {
  connectionKey,
  decodeEntry,
  decodeGroup,
  ENTRY_PREFIX,
  type EntryItem,
  encodeEntry,
  encodeGroup,
  entryKey,
  GROUP_PREFIX,
  type GroupItem,
  groupKey,
  type Item,
  namespacePartition,
} from './item-codec.ts';

/** Optimistic-lock retries of an apply that raced another writer of the same object. */
const APPLY_ATTEMPTS = 3;
/** BatchWriteItem's limit. */
const BATCH_SIZE = 25;
/**
 * Namespace Queries in flight at once when listing every namespace: a few hundred namespaces
 * read in a few dozen round trips, without a burst against the table.
 */
const LIST_CONCURRENCY = 8;

type ApplyGroupResult = { outcome: 'created' | 'updated' | 'unchanged'; group: WorkloadGroup };

/**
 * The operator's side of the registry (the CLI): groups and hand-made entries as documents.
 * Applies read, decide, then write conditionally on what they read (`revision`), so two
 * operators applying at once, or a VM connecting while an entry is applied, never lose a write.
 */
export class DynamoDbCatalog implements CatalogDocumentStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #namespaces: DynamoDbNamespaceIndex;
  readonly #history: DynamoDbEntryHistory;
  readonly #counters: DynamoDbCellCounters;

  constructor(client: DynamoDBDocumentClient, tableName: string, history?: DynamoDbEntryHistory) {
    this.#client = client;
    this.#table = tableName;
    this.#namespaces = new DynamoDbNamespaceIndex(client, tableName);
    this.#history = history ?? new DynamoDbEntryHistory(client, tableName);
    this.#counters = new DynamoDbCellCounters(new RegistryTable(client, tableName));
  }

  /** Whether the group, and the entries its VMs would get, fit in one item each. */
  groupSizeRefusal(group: WorkloadGroup): SizeRefusal | undefined {
    return groupSizeRefusal(group);
  }

  /** Whether a hand-made entry fits in one item, with room for its events and a cordon. */
  entrySizeRefusal(entry: WorkloadEntry): SizeRefusal | undefined {
    return entrySizeRefusal(entry);
  }

  /** The namespace index as it is (no backfill): what the projector's full reconcile reads. */
  listNamespaces(): Promise<NamespaceList> {
    return this.#namespaces.list();
  }

  async getGroup(ref: ObjectRef): Promise<StoredGroup | undefined> {
    const item = await this.#get(groupKey(ref), false);
    return item ? decodeGroup(item) : undefined;
  }

  /** `generation` goes up only when the spec changes; the uid is minted once, on create. */
  async applyGroup(group: WorkloadGroup): Promise<ApplyGroupResult> {
    refuseForged('workloadgroup', group, forgedGroupState(group));
    refuseOversized('workloadgroup', group, groupSizeRefusal(group));
    // Every apply, 'unchanged' too: re-applying the groups indexes a namespace from before
    // the index (and repairs one whose index write failed after the group's).
    await this.#namespaces.record(group.metadata.namespace);
    const wanted = normalized(group);
    for (let attempt = 0; attempt < APPLY_ATTEMPTS; attempt++) {
      const existing = (await this.#get(groupKey(group.metadata), true)) as GroupItem | undefined;
      if (!existing) {
        const uid = group.metadata.uid ?? randomUUID();
        const item = encodeGroup(
          { group: { ...wanted, metadata: { ...wanted.metadata, uid } }, generation: 1 },
          1,
        );
        if (await this.#put(item, 'attribute_not_exists(pk)', {})) {
          await this.#noteHeartbeatChange(undefined, item.group);
          return { outcome: 'created', group: item.group };
        }
        continue;
      }
      const old = existing.group;
      const specChanged = !isDeepStrictEqual(normalized(old.spec), wanted.spec);
      const metaChanged =
        !isDeepStrictEqual(old.metadata.labels ?? {}, wanted.metadata.labels ?? {}) ||
        !isDeepStrictEqual(old.metadata.annotations ?? {}, wanted.metadata.annotations ?? {});
      if (!specChanged && !metaChanged && old.apiVersion === wanted.apiVersion) {
        return { outcome: 'unchanged', group: old };
      }
      const generation = existing.generation + (specChanged ? 1 : 0);
      const metadata = { ...wanted.metadata, uid: old.metadata.uid };
      if (old.metadata.creationTimestamp !== undefined) {
        metadata.creationTimestamp = old.metadata.creationTimestamp;
      }
      const item = encodeGroup(
        { group: { ...wanted, metadata }, generation },
        existing.revision + 1,
      );
      if (await this.#put(item, 'revision = :revision', { ':revision': existing.revision })) {
        await this.#noteHeartbeatChange(old, item.group);
        return { outcome: 'updated', group: item.group };
      }
    }
    throw new ConflictError(
      `workloadgroup ${formatRef(group.metadata)} is being changed by someone else; apply it again`,
    );
  }

  /**
   * After a group write that changed its heartbeat annotations: counts the change, so the
   * sweeper lists the groups again before its next pass instead of at its next run (a VM
   * that connects in the same second is held to the new setting from its first ping, and
   * must be checked at its pace from then on). A failure is thrown: the group is written,
   * and the sweeper still lists it within a sweep interval.
   */
  async #noteHeartbeatChange(
    before: WorkloadGroup | undefined,
    after: WorkloadGroup,
  ): Promise<void> {
    const setting = (group: WorkloadGroup | undefined) =>
      [HEARTBEAT_ANNOTATIONS.interval, HEARTBEAT_ANNOTATIONS.misses]
        .map((key) => group?.metadata.annotations?.[key] ?? '')
        .join('\n');
    if (setting(before) === setting(after)) return;
    await this.#client.send(new UpdateCommand(heartbeatChangeUpdate(this.#table)));
  }

  async listGroups(namespace?: string): Promise<StoredGroup[]> {
    return (await this.#list(GROUP_PREFIX, namespace)).map(decodeGroup);
  }

  async deleteGroup(ref: ObjectRef): Promise<boolean> {
    return (await this.#delete(groupKey(ref))) !== undefined;
  }

  /**
   * Creates or updates a hand-made entry. Refuses ('conflict') to touch an auto-registered one:
   * the VM's connections own it, and the condition catches a VM that connects between the read
   * and the write.
   */
  async applyEntry(
    entry: WorkloadEntry,
  ): Promise<'created' | 'updated' | 'unchanged' | 'conflict'> {
    refuseForged('workloadentry', entry, forgedEntryState(entry));
    refuseOversized('workloadentry', entry, entrySizeRefusal(entry));
    await this.#namespaces.record(entry.metadata.namespace);
    for (let attempt = 0; attempt < APPLY_ATTEMPTS; attempt++) {
      const existing = (await this.#get(entryKey(entry.metadata), true)) as EntryItem | undefined;
      if (existing?.autoRegistrationGroup !== undefined) return 'conflict';
      const uid = entry.metadata.uid ?? existing?.entry.metadata.uid ?? randomUUID();
      const wanted = normalized({ ...entry, metadata: { ...entry.metadata, uid } });
      if (existing && isDeepStrictEqual(normalized(existing.entry), wanted)) return 'unchanged';
      const revision = (existing?.revision ?? 0) + 1;
      const item: Item = { ...encodeEntry({ entry: wanted, revision }), ...keptState(existing) };
      const written = existing
        ? await this.#put(item, 'revision = :revision', { ':revision': existing.revision })
        : await this.#put(item, 'attribute_not_exists(pk)', {});
      if (written) return existing ? 'updated' : 'created';
    }
    throw new ConflictError(
      `workloadentry ${formatRef(entry.metadata)} is being changed by someone else; apply it again`,
    );
  }

  async listEntries(namespace?: string): Promise<EntryRecord[]> {
    return (await this.#list(ENTRY_PREFIX, namespace)).map(decodeEntry);
  }

  /** Deletes the entry and the records of the connections it listed (they point at nothing). */
  async deleteEntry(ref: ObjectRef, deletion?: EntryDeletion): Promise<boolean> {
    return (await this.removeEntry(ref, deletion)) !== undefined;
  }

  /**
   * Deletes the entry and says which connections held it: read from the deleted item itself
   * (`ALL_OLD`), so a connect that landed between an operator's read and this delete is among
   * them, and one that lands after it creates a fresh entry. Undefined when it was not there.
   */
  async removeEntry(
    ref: ObjectRef,
    deletion?: EntryDeletion,
  ): Promise<{ holders: string[] } | undefined> {
    const old = await this.#delete(entryKey(ref));
    if (!old) return undefined;
    // Its part leaves its cell's counters, or fail static would count it forever.
    await this.#counters.countRemoval(decodeEntry(old), 'deleted');
    // Its events outlive it, with who deleted it (dynamodb-entry-history.ts).
    const at = deletion?.at ?? Date.now();
    const cause = deletion?.cause ?? { kind: 'operator' };
    await this.#history.recordDeletion(old, deletedEvent(at, cause, deletion?.note));
    const holders = [...((old as EntryItem).conns ?? [])];
    await this.deleteConnectionRecords(holders);
    return { holders };
  }

  async deleteConnectionRecords(connectionIds: string[]): Promise<void> {
    for (let start = 0; start < connectionIds.length; start += BATCH_SIZE) {
      const batch = connectionIds.slice(start, start + BATCH_SIZE);
      let requests: Record<string, unknown>[] | undefined = batch.map((id) => ({
        DeleteRequest: { Key: connectionKey(id) },
      }));
      // BatchWriteItem may leave some undone under throttling; they come back unprocessed and
      // are retried after a short, growing pause (AWS's advice for unprocessed items).
      for (let retry = 0; requests && requests.length > 0; retry++) {
        if (retry > 0)
          await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** Math.min(retry, 6)));
        const result: BatchWriteCommandOutput = await this.#client.send(
          new BatchWriteCommand({ RequestItems: { [this.#table]: requests } }),
        );
        requests = result.UnprocessedItems?.[this.#table];
      }
    }
  }

  /**
   * One namespace: a Query. All namespaces (`get -A`, `export -A`): the namespace index, then
   * a Query per namespace, LIST_CONCURRENCY at a time, in namespace order. A table from before
   * the index is backfilled by the first such listing (one Scan of the keys, then never again).
   */
  async #list(prefix: string, namespace: string | undefined): Promise<Item[]> {
    if (namespace !== undefined) return this.#listNamespace(prefix, namespace);
    const index = await this.#namespaces.list();
    const namespaces = index.complete ? index.namespaces : await this.#namespaces.backfill();
    const lists: Item[][] = new Array(namespaces.length);
    let next = 0;
    const lane = async () => {
      for (let at = next++; at < namespaces.length; at = next++) {
        lists[at] = await this.#listNamespace(prefix, namespaces[at] as string);
      }
    };
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, namespaces.length) }, lane));
    return lists.flat();
  }

  async #listNamespace(prefix: string, namespace: string): Promise<Item[]> {
    const items: Item[] = [];
    const pages = queryItems(this.#client, {
      TableName: this.#table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': namespacePartition(namespace), ':prefix': prefix },
    });
    for await (const item of pages) items.push(item);
    return items;
  }

  async #get(key: Record<string, string>, consistent: boolean): Promise<Item | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#table, Key: key, ConsistentRead: consistent }),
    );
    return Item;
  }

  /**
   * One conditional put, retry-safe: when the SDK retries a put whose first attempt was
   * applied but answered with an error (a 500, a lost response), the retry fails the condition
   * the first attempt changed. The item carries this write's id, so reading it back tells our
   * own applied write (true) from someone else's (false): `apply` then reports 'created', not
   * 'unchanged', for the group it just created.
   */
  async #put(item: Item, condition: string, values: Record<string, unknown>): Promise<boolean> {
    const writeId = randomUUID();
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#table,
          Item: { ...item, writeId },
          ConditionExpression: condition,
          ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
        }),
      );
      return true;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const stored = await this.#get({ pk: String(item.pk), sk: String(item.sk) }, true);
      return stored?.writeId === writeId;
    }
  }

  async #delete(key: Record<string, string>): Promise<Item | undefined> {
    const { Attributes } = await this.#client.send(
      new DeleteCommand({ TableName: this.#table, Key: key, ReturnValues: 'ALL_OLD' }),
    );
    return Attributes;
  }
}

/**
 * What an apply of a hand-made entry keeps of the item it replaces: an operator's cordon, and
 * the entry's events, with Updated added (the put rewrites the whole item).
 */
function keptState(existing: EntryItem | undefined): Partial<EntryItem> {
  if (!existing) return {};
  const kept: Partial<EntryItem> = {};
  if (existing.cordon !== undefined) kept.cordon = existing.cordon;
  if (existing.uncordonedAt !== undefined) kept.uncordonedAt = existing.uncordonedAt;
  const at = Date.now();
  const updated = encodeEvent(entryEvent('Updated', at, 'changed by registrar apply'));
  kept.events = [...(existing.events ?? []), updated].slice(-EVENTS_KEPT);
  kept.eventsSince = existing.eventsSince ?? at;
  return kept;
}

/** A document that sets state only the registrar writes (system annotations, `Healthy`). */
function refuseForged(
  kind: string,
  object: WorkloadGroup | WorkloadEntry,
  forged: Forgery[],
): void {
  const [first] = forged;
  if (!first) return;
  const problems = forged.map((forgery) => forgery.problem).join('; ');
  throw new InvalidRequestError(`${kind} ${formatRef(object.metadata)}: ${problems}`, first.field);
}

/**
 * An object over DynamoDB's 400 KB item limit: refused before any request, naming its largest
 * fields, instead of DynamoDB's bare "Item size has exceeded the maximum allowed size".
 */
function refuseOversized(
  kind: string,
  object: WorkloadGroup | WorkloadEntry,
  refusal: SizeRefusal | undefined,
): void {
  if (!refusal) return;
  const message = `${kind} ${formatRef(object.metadata)}: ${refusal.message}`;
  throw new InvalidRequestError(message, refusal.field);
}

/** Drops `undefined` members, as storing does, so a document compares equal to its stored self. */
function normalized<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
