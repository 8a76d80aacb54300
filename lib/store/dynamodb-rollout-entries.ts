import { DeleteCommand, QueryCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { deletedEvent, templateRolledOutEvent } from '../domain/entry-events.ts';
import type { EpochMillis, ObjectRef, WorkloadEntry } from '../domain/model.ts';
import type { EntryDeletion, StoredGroup } from '../domain/registry-records.ts';
import { templateChanges } from '../domain/template-rollout.ts';
import type { OutdatedPage, RolloutEntry, RolloutStore } from '../rollout/rollout-store.ts';
import { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import { DynamoDbEntryEvents, withEntryEvent } from './dynamodb-entry-events.ts';
import type { DynamoDbEntryHistory } from './dynamodb-entry-history.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import {
  connectionKey,
  decodeEntry,
  decodeGroup,
  ENTRY_PREFIX,
  type EntryItem,
  entryKey,
  groupKey,
  type Item,
  namespacePartition,
} from './item-codec.ts';

/**
 * An auto-registered entry's name starts with `<group>-` (entry-name.ts) unless the whole name
 * was over 253 characters and cut to its tail. The name is at most the group, '-', an address
 * (45 characters at most) and '-', a network (63): a group of up to 253 - 110 = 143 characters
 * never has its entries' names cut, so a Query of that prefix reads exactly its entries (and
 * those of groups whose name extends it, which the filter drops). A longer group's entries are
 * found by reading the namespace's entries.
 */
const UNCUT_GROUP_NAME_MAX = 253 - (1 + 45 + 1 + 63);

export function groupEntryPrefix(group: string): string {
  return group.length <= UNCUT_GROUP_NAME_MAX ? `${ENTRY_PREFIX}${group}-` : ENTRY_PREFIX;
}

/** What a rollout reads of an entry: never the holders, health or sweep state. */
const PROJECTION = 'pk, sk, #entry, revision, groupGeneration, agentGiven, autoRegistrationGroup';

type EntryStore = Pick<
  RolloutStore,
  | 'getGroup'
  | 'outdatedEntries'
  | 'groupEntries'
  | 'getRolloutEntry'
  | 'rollOutEntry'
  | 'removeEntry'
  | 'deleteGroupIf'
>;

/** The rollout's reads and writes of a group and its entries, each with its own condition. */
export class DynamoDbRolloutEntries implements EntryStore {
  readonly #table: RegistryTable;
  readonly #history: DynamoDbEntryHistory;
  readonly #events: DynamoDbEntryEvents;
  readonly #counters: DynamoDbCellCounters;

  constructor(table: RegistryTable, history: DynamoDbEntryHistory) {
    this.#table = table;
    this.#history = history;
    this.#events = new DynamoDbEntryEvents(table);
    this.#counters = new DynamoDbCellCounters(table);
  }

  async getGroup(group: ObjectRef): Promise<StoredGroup | undefined> {
    const item = await this.#table.get(groupKey(group));
    return item ? decodeGroup(item) : undefined;
  }

  /**
   * One page of the group's entries from `cursor` (a Query of the name prefix, `Limit` items
   * read), keeping those on an older generation. Eventually consistent: what it misses, the
   * write's condition or the next pass catches.
   */
  async outdatedEntries(
    group: ObjectRef,
    generation: number,
    cursor: string | undefined,
    limit: number,
  ): Promise<OutdatedPage> {
    const pk = namespacePartition(group.namespace);
    const page = await this.#table.client.send(
      new QueryCommand({
        ...groupQuery(this.#table.name),
        FilterExpression:
          'autoRegistrationGroup = :group AND (attribute_not_exists(groupGeneration) OR groupGeneration < :generation)',
        ExpressionAttributeValues: {
          ':pk': pk,
          ':prefix': groupEntryPrefix(group.name),
          ':group': group.name,
          ':generation': generation,
        },
        Limit: limit,
        ...(cursor === undefined ? {} : { ExclusiveStartKey: { pk, sk: cursor } }),
      }),
    );
    const next = page.LastEvaluatedKey?.sk;
    return {
      entries: (page.Items ?? []).map(decodeRolloutEntry),
      ...(typeof next === 'string' ? { next } : {}),
    };
  }

  async groupEntries(group: ObjectRef): Promise<RolloutEntry[]> {
    const entries: RolloutEntry[] = [];
    const items = queryItems(this.#table.client, {
      ...groupQuery(this.#table.name),
      FilterExpression: 'autoRegistrationGroup = :group',
      ExpressionAttributeValues: {
        ':pk': namespacePartition(group.namespace),
        ':prefix': groupEntryPrefix(group.name),
        ':group': group.name,
      },
    });
    for await (const item of items) entries.push(decodeRolloutEntry(item));
    return entries;
  }

  async getRolloutEntry(ref: ObjectRef): Promise<RolloutEntry | undefined> {
    const item = await this.#table.get(entryKey(ref));
    return item?.autoRegistrationGroup === undefined ? undefined : decodeRolloutEntry(item);
  }

  /**
   * The write carries the entry's TemplateUpdated event (what changed, from which generation
   * to which): no request of its own. It returns the event list, and a list grown long is
   * trimmed by one more write, as every event-carrying write does.
   */
  async rollOutEntry(
    read: RolloutEntry,
    group: string,
    entry: WorkloadEntry,
    generation: number,
    at: EpochMillis,
  ): Promise<'updated' | 'conflict'> {
    const event = templateRolledOutEvent(
      at,
      group,
      read.groupGeneration,
      generation,
      templateChanges(read.entry, entry),
    );
    const written = await this.#table.tryUpdate(
      withEntryEvent(rollOutEntryRequest(this.#table.name, read, group, entry, generation), event),
    );
    if (!written) return 'conflict';
    await this.#events.trimAfter(read.ref, written.Attributes, 'new');
    return 'updated';
  }

  /**
   * One DeleteItem for the entry, and one per connection record it names (never a batch). Its
   * events outlive it in a history item, with the cause (dynamodb-entry-history.ts).
   */
  async removeEntry(
    ref: ObjectRef,
    deletion: EntryDeletion,
  ): Promise<{ holders: string[] } | undefined> {
    const { Attributes } = await this.#table.client.send(
      new DeleteCommand({
        TableName: this.#table.name,
        Key: entryKey(ref),
        ReturnValues: 'ALL_OLD',
      }),
    );
    if (!Attributes) return undefined;
    // Its part leaves its cell's counters, or fail static would count it forever.
    await this.#counters.countRemoval(decodeEntry(Attributes), 'deleted');
    await this.#history.recordDeletion(
      Attributes,
      deletedEvent(deletion.at, deletion.cause ?? { kind: 'operator' }, deletion.note),
    );
    const holders = [...((Attributes as EntryItem).conns ?? [])];
    for (const id of holders) {
      await this.#table.client.send(
        new DeleteCommand({ TableName: this.#table.name, Key: connectionKey(id) }),
      );
    }
    return { holders };
  }

  async deleteGroupIf(
    group: ObjectRef,
    expected: { uid: string; generation: number },
  ): Promise<'deleted' | 'changed' | 'gone'> {
    try {
      const { Attributes } = await this.#table.client.send(
        new DeleteCommand({
          TableName: this.#table.name,
          Key: groupKey(group),
          ConditionExpression:
            'attribute_not_exists(pk) OR (#group.#metadata.#uid = :uid AND generation = :generation)',
          ExpressionAttributeNames: { '#group': 'group', '#metadata': 'metadata', '#uid': 'uid' },
          ExpressionAttributeValues: { ':uid': expected.uid, ':generation': expected.generation },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return Attributes ? 'deleted' : 'gone';
    } catch (error) {
      if (isConditionFailed(error)) return 'changed';
      throw error;
    }
  }
}

function groupQuery(tableName: string) {
  return {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ProjectionExpression: PROJECTION,
    ExpressionAttributeNames: { '#entry': 'entry' },
  };
}

/**
 * The rollout's one write per entry: the rebuilt object and the generation, if the entry is
 * still at the revision the rollout read and still auto-registered by this group. A connect,
 * health report, drain or liveness drop bumps the revision, and a delete removes the item:
 * each wins, and the rollout re-reads (a conditional update never creates a deleted entry).
 * The revision goes up too, so a sweep that read the entry before deletes it only after
 * re-reading (its delete is conditional on the revision).
 */
export function rollOutEntryRequest(
  tableName: string,
  read: RolloutEntry,
  group: string,
  entry: WorkloadEntry,
  generation: number,
): UpdateCommandInput {
  return {
    TableName: tableName,
    Key: entryKey(read.ref),
    UpdateExpression: 'SET #entry = :entry, groupGeneration = :generation ADD revision :one',
    ConditionExpression: 'revision = :revision AND autoRegistrationGroup = :group',
    // The appended event list comes back, for the trim of a list grown long.
    ReturnValues: 'UPDATED_NEW',
    ExpressionAttributeNames: { '#entry': 'entry' },
    ExpressionAttributeValues: {
      ':entry': entry,
      ':generation': generation,
      ':revision': read.revision,
      ':group': group,
      ':one': 1,
    },
  };
}

function decodeRolloutEntry(raw: Item): RolloutEntry {
  const item = raw as EntryItem;
  const view: RolloutEntry = {
    ref: { namespace: item.entry.metadata.namespace, name: item.entry.metadata.name },
    entry: item.entry,
    revision: item.revision,
  };
  if (item.groupGeneration !== undefined) view.groupGeneration = item.groupGeneration;
  if (item.agentGiven !== undefined) view.agentGiven = item.agentGiven;
  return view;
}
