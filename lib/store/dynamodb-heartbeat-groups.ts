import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { EntryRecord } from '../domain/entry-record.ts';
import { type Heartbeat, parseHeartbeat } from '../domain/heartbeat.ts';
import type { ObjectRef, WorkloadGroup } from '../domain/model.ts';
import type {
  HeartbeatGroupStore,
  HeartbeatGroups,
  NameRange,
} from '../registration/heartbeat-store.ts';
import { queryItems } from './dynamodb-client.ts';
import { HEARTBEAT_CHANGES_KEY } from './dynamodb-heartbeat-changes.ts';
import { DynamoDbNamespaceIndex } from './dynamodb-namespace-index.ts';
import { namespaceSettingsKey } from './dynamodb-namespace-settings.ts';
import { groupEntryPrefix } from './dynamodb-rollout-entries.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { decodeEntry, ENTRY_PREFIX, GROUP_PREFIX, namespacePartition } from './item-codec.ts';

/** The sweeper's record of the groups that set a heartbeat, beside its liveness mark. */
const HEARTBEAT_GROUPS_KEY = { pk: 'SWEEPER', sk: 'heartbeats' };

/** Namespaces listed side by side when the sweeper looks for groups that set a heartbeat. */
const LIST_CONCURRENCY = 8;
/**
 * Entries a page of a group's held entries reads (before the filter): ~150 KB at ~1.5 KB an
 * entry. Read units are by size, so smaller pages cost no more units, only more requests.
 */
export const HELD_PAGE = 100;

/**
 * What the sweeper's heartbeat lane reads and writes (lib/registration/sweep-heartbeat.ts):
 * the groups that set a heartbeat (listed once per liveness interval, not every run), its own
 * record of them, and the connected entries of one such group (a Query of the group's name
 * prefix: reads proportional to the group's entries, never to the table).
 */
export class DynamoDbHeartbeatGroups implements HeartbeatGroupStore {
  readonly #table: RegistryTable;
  readonly #namespaces: DynamoDbNamespaceIndex;

  constructor(table: RegistryTable) {
    this.#table = table;
    this.#namespaces = new DynamoDbNamespaceIndex(table.client, table.name);
  }

  async heartbeatGroups(): Promise<HeartbeatGroups | undefined> {
    const item = await this.#table.get(HEARTBEAT_GROUPS_KEY);
    if (!item || typeof item.groups !== 'string' || typeof item.listedAt !== 'number') {
      return undefined;
    }
    return {
      listedAt: item.listedAt,
      groups: JSON.parse(item.groups) as HeartbeatGroups['groups'],
      ...(typeof item.changes === 'number' ? { changes: item.changes } : {}),
    };
  }

  /** One JSON string: group names as keys stay out of DynamoDB's attribute-name rules. */
  async saveHeartbeatGroups(state: HeartbeatGroups): Promise<void> {
    await this.#table.client.send(
      new PutCommand({
        TableName: this.#table.name,
        Item: {
          ...HEARTBEAT_GROUPS_KEY,
          listedAt: state.listedAt,
          groups: JSON.stringify(state.groups),
          ...(state.changes === undefined ? {} : { changes: state.changes }),
        },
      }),
    );
  }

  /** Eventually consistent (half a read unit): a change seen one pass later is no harm. */
  async heartbeatChanges(): Promise<number> {
    const { Item } = await this.#table.client.send(
      new GetCommand({ TableName: this.#table.name, Key: HEARTBEAT_CHANGES_KEY }),
    );
    return typeof Item?.changes === 'number' ? Item.changes : 0;
  }

  /**
   * Each namespace's `heartbeatChecks` setting (its item in the namespace settings partition,
   * whose key that adapter owns), read side by side: only namespaces with heartbeat groups.
   */
  async heartbeatQuotas(namespaces: readonly string[]): Promise<Record<string, number>> {
    const quotas: Record<string, number> = {};
    let next = 0;
    // LIST_CONCURRENCY at a time: a registrar of a thousand tenants is a thousand small reads.
    const lane = async () => {
      for (let at = next++; at < namespaces.length; at = next++) {
        const namespace = namespaces[at] as string;
        const { Item } = await this.#table.client.send(
          new GetCommand({
            TableName: this.#table.name,
            Key: namespaceSettingsKey(namespace),
            ProjectionExpression: 'heartbeatChecks',
          }),
        );
        if (typeof Item?.heartbeatChecks === 'number') quotas[namespace] = Item.heartbeatChecks;
      }
    };
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, namespaces.length) }, lane));
    return quotas;
  }

  /** Every group whose annotations set a heartbeat: the namespace index, a Query per namespace. */
  async groupHeartbeats(): Promise<{ group: ObjectRef; heartbeat: Heartbeat }[]> {
    const { namespaces } = await this.#namespaces.list();
    const found: { group: ObjectRef; heartbeat: Heartbeat }[] = [];
    let next = 0;
    const lane = async () => {
      for (let at = next++; at < namespaces.length; at = next++) {
        const items = queryItems(this.#table.client, {
          TableName: this.#table.name,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ProjectionExpression: '#group.metadata',
          ExpressionAttributeNames: { '#group': 'group' },
          ExpressionAttributeValues: {
            ':pk': namespacePartition(namespaces[at] as string),
            ':prefix': GROUP_PREFIX,
          },
        });
        for await (const item of items) {
          const metadata = (item.group as Pick<WorkloadGroup, 'metadata'> | undefined)?.metadata;
          if (!metadata) continue;
          const parsed = parseHeartbeat(metadata.annotations ?? {});
          if ('heartbeat' in parsed && parsed.heartbeat) {
            found.push({
              group: { namespace: metadata.namespace, name: metadata.name },
              heartbeat: parsed.heartbeat,
            });
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, namespaces.length) }, lane));
    return found;
  }

  /**
   * How many of the group's entries have a holder now: a Query of the group's name prefix,
   * counted (`Select: COUNT`: read units as for reading them, nothing transferred). For
   * `apply`'s heartbeat quota check, an operator's command, never the event path.
   */
  async heldEntryCount(group: ObjectRef): Promise<number> {
    const prefix = groupEntryPrefix(group.name);
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.#table.client.send(
        new QueryCommand({
          TableName: this.#table.name,
          Select: 'COUNT',
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          FilterExpression: 'autoRegistrationGroup = :group AND attribute_exists(conns)',
          ExpressionAttributeValues: {
            ':pk': namespacePartition(group.namespace),
            ':from': prefix,
            ':to': `${prefix}\uffff`,
            ':group': group.name,
          },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      count += page.Count ?? 0;
      start = page.LastEvaluatedKey;
    } while (start);
    return count;
  }

  /**
   * The group's entries that are still held, in name order, one page of HELD_PAGE entries at
   * a time: the sweeper reads only as far as its pass gets (a pass shares its time among
   * namespaces and ends with the sweep interval), and no page of a large group holds another
   * namespace's turn for long (a 1 MB page took 2-3.6 s on DynamoDB Local). `range` narrows
   * the key condition itself (a resumed pass reads only what it has not checked yet).
   */
  async *heldEntriesOf(group: ObjectRef, range: NameRange = {}): AsyncIterable<EntryRecord> {
    const prefix = groupEntryPrefix(group.name);
    // The sort keys of the group's entries lie in [prefix, prefix + U+FFFF]: BETWEEN bounds them
    // as begins_with would, and takes a resume point as its lower end (inclusive: the entry at
    // `after` itself is skipped below). An empty `after` is the group's start.
    const from = range.after ? `${ENTRY_PREFIX}${range.after}` : prefix;
    const to = range.upTo !== undefined ? `${ENTRY_PREFIX}${range.upTo}` : `${prefix}\uffff`;
    if (from > to) return;
    const items = queryItems(this.#table.client, {
      TableName: this.#table.name,
      Limit: HELD_PAGE,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      FilterExpression: 'autoRegistrationGroup = :group AND attribute_exists(conns)',
      ExpressionAttributeValues: {
        ':pk': namespacePartition(group.namespace),
        ':from': from,
        ':to': to,
        ':group': group.name,
      },
    });
    for await (const item of items) {
      if (range.after && item.sk === from) continue;
      yield decodeEntry(item);
    }
  }
}
