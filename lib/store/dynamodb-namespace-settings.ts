import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { EpochMillis } from '../domain/model.ts';
import type { NamespaceSettings } from '../domain/namespace-settings.ts';
import type {
  NamespaceSettingsStore,
  SettingsChange,
  SettingsField,
} from '../registration/namespace-settings-store.ts';
import { isConditionFailed, readPartition } from './dynamodb-client.ts';
import { PARTITIONS } from './table-definition.ts';

export function namespaceSettingsKey(namespace: string): { pk: string; sk: string } {
  return { pk: PARTITIONS.namespaceSettings, sk: namespace };
}

/**
 * Namespace settings under one partition (`NSCONFIG` / `<namespace>`): one small item per
 * namespace the operator configured. The connect path reads one by key through a cache
 * (lib/registration/namespace-settings-cache.ts), so at any fleet size the partition is read
 * at most once per function instance, namespace and cache period: never a hot key.
 */
export class DynamoDbNamespaceSettings implements NamespaceSettingsStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  /** Eventually consistent (half a read unit): the connect path caches it anyway. */
  async getSettings(namespace: string, consistent = false): Promise<NamespaceSettings | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({
        TableName: this.#table,
        Key: namespaceSettingsKey(namespace),
        ConsistentRead: consistent,
      }),
    );
    return Item ? decodeSettings(Item) : undefined;
  }

  /**
   * One update: SET what is given, REMOVE what is unset, so two operators changing different
   * fields at once both land (a read-modify-write would lose one).
   */
  async updateSettings(
    namespace: string,
    change: SettingsChange,
    at: EpochMillis,
  ): Promise<NamespaceSettings> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':at': at, ':ns': namespace };
    const sets = ['#updatedAt = :at', '#namespace = :ns'];
    names['#updatedAt'] = 'updatedAt';
    names['#namespace'] = 'namespace';
    for (const [field, value] of Object.entries(change.set) as [SettingsField, unknown][]) {
      if (value === undefined) continue;
      names[`#${field}`] = field;
      values[`:${field}`] = value;
      sets.push(`#${field} = :${field}`);
    }
    const removes = change.unset
      .filter((field) => !(field in change.set))
      .map((field) => {
        names[`#${field}`] = field;
        return `#${field}`;
      });
    const { Attributes } = await this.#client.send(
      new UpdateCommand({
        TableName: this.#table,
        Key: namespaceSettingsKey(namespace),
        UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return decodeSettings(Attributes ?? { namespace });
  }

  listSettings(): Promise<NamespaceSettings[]> {
    return readPartition(this.#client, this.#table, PARTITIONS.namespaceSettings, decodeSettings);
  }

  async deleteSettings(namespace: string): Promise<boolean> {
    try {
      await this.#client.send(
        new DeleteCommand({
          TableName: this.#table,
          Key: namespaceSettingsKey(namespace),
          ConditionExpression: 'attribute_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }
}

/**
 * The CLI writes only validated fields. A quota of the wrong type (an item edited by hand) is
 * read as unset: the default applies. A restriction of the wrong type fails closed: read as an
 * empty list, it allows nothing, and every refusal says "allowed: none" until it is fixed.
 */
export function decodeSettings(item: Record<string, unknown>): NamespaceSettings {
  const settings: NamespaceSettings = { namespace: String(item.namespace ?? item.sk) };
  if (isPositive(item.maxEntries)) settings.maxEntries = item.maxEntries;
  if (isPositive(item.connectRate)) settings.connectRate = item.connectRate;
  if (isPositive(item.heartbeatChecks)) settings.heartbeatChecks = item.heartbeatChecks;
  if (item.networks !== undefined) settings.networks = stringList(item.networks);
  if (item.addressRanges !== undefined) settings.addressRanges = stringList(item.addressRanges);
  if (typeof item.updatedAt === 'number') settings.updatedAt = item.updatedAt;
  return settings;
}

function isPositive(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

function stringList(value: unknown): string[] {
  const items = value instanceof Set ? [...value] : Array.isArray(value) ? value : [];
  return items.every((item) => typeof item === 'string') ? (items as string[]) : [];
}
