import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { EpochMillis } from '../domain/model.ts';
import type {
  EffectiveSweepPolicy,
  RecordedSweepPolicy,
  SweepPolicyStore,
} from '../sweep/sweep-policy-store.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import { PARTITIONS } from './table-definition.ts';

export const SWEEP_POLICY_KEY = { pk: PARTITIONS.config, sk: 'sweep-policy' } as const;

const FIELDS = [
  'gracePeriodMs',
  'maxConnectionAgeMs',
  'livenessIntervalMs',
  'sweepIntervalMs',
] as const satisfies readonly (keyof EffectiveSweepPolicy)[];

export class DynamoDbSweepPolicyStore implements SweepPolicyStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async read(): Promise<RecordedSweepPolicy | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#table, Key: SWEEP_POLICY_KEY, ConsistentRead: true }),
    );
    return Item ? decode(Item) : undefined;
  }

  async record(policy: EffectiveSweepPolicy, now: EpochMillis): Promise<'recorded' | 'unchanged'> {
    const stored = await this.read();
    if (
      stored &&
      FIELDS.every((field) => stored[field] === policy[field]) &&
      stored.authMode === policy.authMode
    ) {
      return 'unchanged';
    }
    const values = {
      ...Object.fromEntries(FIELDS.map((field) => [field, policy[field]])),
      ...(policy.authMode ? { authMode: policy.authMode } : {}),
    };
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#table,
          Item: { ...SWEEP_POLICY_KEY, ...values, recordedAt: now },
          // Replace only what was read: a concurrent writer of another policy (a deploy in
          // progress, old and new sweeper side by side) is settled by the next run.
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

function decode(item: Record<string, unknown>): RecordedSweepPolicy | undefined {
  const numbers = [...FIELDS, 'recordedAt'] as const;
  for (const field of numbers) {
    const value = item[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return undefined;
  }
  const policy = Object.fromEntries(
    numbers.map((f) => [f, item[f]]),
  ) as unknown as RecordedSweepPolicy;
  if (item.authMode === 'token' || item.authMode === 'iam') policy.authMode = item.authMode;
  return policy;
}
