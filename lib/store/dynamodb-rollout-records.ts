import { DeleteCommand, PutCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { RolloutRecord, RolloutStore } from '../rollout/rollout-store.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import type { Item } from './item-codec.ts';
import { PARTITIONS } from './table-definition.ts';

/** `ROLLOUT / <namespace>/<name>`: a namespace is a DNS-1123 label, so '/' splits it off. */
export function rolloutKey(group: ObjectRef): { pk: string; sk: string } {
  return { pk: PARTITIONS.rollouts, sk: `${group.namespace}/${group.name}` };
}

/** The runs' lease; '#' sorts before every namespace and never names one. */
export const ROLLOUT_LEASE_KEY = { pk: PARTITIONS.rollouts, sk: '#lease' } as const;

/** The fields a run owns; the operator's pause and the sync's removal request are apart. */
const RUN_FIELDS = [
  'generation',
  'startedAt',
  'total',
  'updated',
  'cursor',
  'pass',
  'skipped',
  'stepStartedAt',
  'stepUpdated',
  'completedAt',
  'waiting',
  'recheckAt',
] as const satisfies readonly (keyof RolloutRecord)[];

type RecordStore = Pick<
  RolloutStore,
  | 'listRollouts'
  | 'getRollout'
  | 'saveRollout'
  | 'deleteRollout'
  | 'setPaused'
  | 'requestRemoval'
  | 'acquireLease'
  | 'releaseLease'
>;

/**
 * The rollout records: one small item per group ever rolled out, in one partition, so a run
 * reads them all with one Query. Written once per page of entries a run updates (100), and by
 * `registrar rollout pause|resume`, never per entry.
 */
export class DynamoDbRolloutRecords implements RecordStore {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  async listRollouts(): Promise<RolloutRecord[]> {
    const records: RolloutRecord[] = [];
    const items = queryItems(this.#table.client, {
      TableName: this.#table.name,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': PARTITIONS.rollouts },
      ConsistentRead: true,
    });
    for await (const item of items) {
      if (item.sk !== ROLLOUT_LEASE_KEY.sk) records.push(decodeRollout(item));
    }
    return records;
  }

  async getRollout(group: ObjectRef): Promise<RolloutRecord | undefined> {
    const item = await this.#table.get(rolloutKey(group));
    return item ? decodeRollout(item) : undefined;
  }

  async saveRollout(record: RolloutRecord): Promise<boolean> {
    const result = await this.#table.tryUpdate(saveRolloutRequest(this.#table.name, record));
    return result !== undefined;
  }

  async deleteRollout(group: ObjectRef): Promise<void> {
    await this.#table.client.send(
      new DeleteCommand({ TableName: this.#table.name, Key: rolloutKey(group) }),
    );
  }

  async setPaused(group: ObjectRef, pausedAt: EpochMillis | undefined): Promise<void> {
    await this.#table.tryUpdate({
      TableName: this.#table.name,
      Key: rolloutKey(group),
      ...(pausedAt === undefined
        ? { UpdateExpression: 'REMOVE pausedAt' }
        : {
            // The first pause's time stays: a second `pause` is not a new one.
            UpdateExpression: 'SET pausedAt = if_not_exists(pausedAt, :at)',
            ExpressionAttributeValues: { ':at': pausedAt },
          }),
    });
  }

  async requestRemoval(group: ObjectRef, removal: RolloutRecord['removal']): Promise<void> {
    await this.#table.tryUpdate({
      TableName: this.#table.name,
      Key: rolloutKey(group),
      ...(removal === undefined
        ? { UpdateExpression: 'REMOVE removal' }
        : {
            UpdateExpression: 'SET removal = :removal',
            ExpressionAttributeValues: { ':removal': removal },
          }),
    });
  }

  async acquireLease(holder: string, now: EpochMillis, until: EpochMillis) {
    try {
      await this.#table.client.send(
        new PutCommand({
          TableName: this.#table.name,
          Item: { ...ROLLOUT_LEASE_KEY, holder, until },
          ConditionExpression: 'attribute_not_exists(pk) OR #until <= :now OR holder = :holder',
          ExpressionAttributeNames: { '#until': 'until' },
          ExpressionAttributeValues: { ':now': now, ':holder': holder },
        }),
      );
      return { acquired: true } as const;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const item = await this.#table.get(ROLLOUT_LEASE_KEY);
      return {
        acquired: false,
        holder: String(item?.holder ?? 'unknown'),
        until: Number(item?.until ?? now),
      } as const;
    }
  }

  async releaseLease(holder: string): Promise<void> {
    await this.#table.tryUpdate({
      TableName: this.#table.name,
      Key: ROLLOUT_LEASE_KEY,
      UpdateExpression: 'SET #until = :free',
      ConditionExpression: 'holder = :holder',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':free': 0, ':holder': holder },
    });
  }
}

/**
 * A run's save: SET what it knows, REMOVE what it no longer has (a finished pass's cursor),
 * conditional on the revision it read, so two runs (a lease that ran out under a slow one)
 * never interleave their cursors. A record created by `pause` has no revision yet.
 */
export function saveRolloutRequest(tableName: string, record: RolloutRecord): UpdateCommandInput {
  const set: string[] = ['#namespace = :namespace', '#name = :name'];
  const remove: string[] = [];
  // Every field by a name placeholder: `total`, `pass` and others are reserved words.
  const names: Record<string, string> = { '#namespace': 'namespace', '#name': 'name' };
  const values: Record<string, unknown> = {
    ':namespace': record.group.namespace,
    ':name': record.group.name,
    ':one': 1,
  };
  for (const field of RUN_FIELDS) {
    const value = record[field];
    names[`#${field}`] = field;
    if (value === undefined) remove.push(`#${field}`);
    else {
      set.push(`#${field} = :${field}`);
      values[`:${field}`] = value;
    }
  }
  let condition = 'attribute_not_exists(revision)';
  if (record.revision > 0) {
    condition = 'revision = :revision';
    values[':revision'] = record.revision;
  }
  return {
    TableName: tableName,
    Key: rolloutKey(record.group),
    UpdateExpression:
      `SET ${set.join(', ')}` +
      (remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : '') +
      ' ADD revision :one',
    ConditionExpression: condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

export function decodeRollout(item: Item): RolloutRecord {
  const sk = String(item.sk);
  const slash = sk.indexOf('/');
  const number = (field: string) =>
    typeof item[field] === 'number' ? (item[field] as number) : undefined;
  const record: RolloutRecord = {
    group: { namespace: sk.slice(0, slash), name: sk.slice(slash + 1) },
    total: number('total') ?? 0,
    updated: number('updated') ?? 0,
    pass: number('pass') ?? 0,
    skipped: number('skipped') ?? 0,
    stepUpdated: number('stepUpdated') ?? 0,
    waiting: number('waiting') ?? 0,
    revision: number('revision') ?? 0,
  };
  for (const field of [
    'generation',
    'startedAt',
    'stepStartedAt',
    'completedAt',
    'recheckAt',
    'pausedAt',
  ] as const) {
    const value = number(field);
    if (value !== undefined) record[field] = value;
  }
  if (typeof item.cursor === 'string') record.cursor = item.cursor;
  if (item.removal && typeof item.removal === 'object') {
    record.removal = item.removal as NonNullable<RolloutRecord['removal']>;
  }
  return record;
}
