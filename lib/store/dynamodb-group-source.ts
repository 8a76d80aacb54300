import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { type GroupSource, sameGroupSource } from '../domain/group-source.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { GroupSourceStore, RecordedGroupSource } from '../rollout/group-source-store.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import { PARTITIONS } from './table-definition.ts';

export const GROUP_SOURCE_KEY = { pk: PARTITIONS.config, sk: 'group-source' } as const;

/**
 * Where the running registrar takes its WorkloadGroups from, recorded in its table (as the
 * sweep policy is) so that every client applies it: `registrar apply` of a group refuses when
 * the cluster is the source, naming it. Written by the functions that know the mode from
 * their configuration (the rollout function every run, the group sync) and by `npm start`;
 * one read per run, a write only when the mode changed. Absent: the registry is the source.
 */
export class DynamoDbGroupSource implements GroupSourceStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async read(): Promise<RecordedGroupSource | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#table, Key: GROUP_SOURCE_KEY, ConsistentRead: true }),
    );
    if (!Item || (Item.source !== 'registry' && Item.source !== 'cluster')) return undefined;
    const source: GroupSource =
      Item.source === 'cluster'
        ? {
            kind: 'cluster',
            ...(typeof Item.selector === 'string' ? { selector: Item.selector } : {}),
          }
        : { kind: 'registry' };
    return { source, recordedAt: Number(Item.recordedAt ?? 0) };
  }

  /** Conditional on what was read: two writers of the same mode end unchanged, not in error. */
  async record(source: GroupSource, now: EpochMillis): Promise<'recorded' | 'unchanged'> {
    const stored = await this.read();
    if (stored && sameGroupSource(stored.source, source)) return 'unchanged';
    if (!stored && source.kind === 'registry') return 'unchanged';
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#table,
          Item: {
            ...GROUP_SOURCE_KEY,
            source: source.kind,
            ...(source.kind === 'cluster' && source.selector ? { selector: source.selector } : {}),
            recordedAt: now,
          },
          ConditionExpression: stored ? 'recordedAt = :read' : 'attribute_not_exists(pk)',
          ...(stored ? { ExpressionAttributeValues: { ':read': stored.recordedAt } } : {}),
        }),
      );
      return 'recorded';
    } catch (error) {
      if (isConditionFailed(error)) return 'unchanged';
      throw error;
    }
  }
}
