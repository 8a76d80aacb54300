import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { EpochMillis } from '../domain/model.ts';
import type { LivenessPolicy, SweepPolicy } from '../domain/sweep-policy.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import { PARTITIONS } from './table-definition.ts';

/**
 * The registrar's effective sweep policy, recorded in its own table so that every client (a
 * manual `registrar sweep`, `describe`) applies the policy the running registrar applies,
 * never its own defaults: a client with a 5 m default on a registrar configured with 1 h
 * would delete entries the registrar still keeps.
 */
export type EffectiveSweepPolicy = SweepPolicy &
  LivenessPolicy & {
    /**
     * How agents authenticate (token or iam), recorded beside the policy so the CLI can warn
     * an operator making join tokens for a registrar that never reads them.
     */
    authMode?: 'token' | 'iam';
  };

export interface RecordedSweepPolicy extends EffectiveSweepPolicy {
  /** When this policy was first recorded (the last change of configuration). */
  recordedAt: EpochMillis;
}

export const SWEEP_POLICY_KEY = { pk: PARTITIONS.config, sk: 'sweep-policy' } as const;

const FIELDS = [
  'gracePeriodMs',
  'maxConnectionAgeMs',
  'livenessIntervalMs',
  'sweepIntervalMs',
] as const satisfies readonly (keyof EffectiveSweepPolicy)[];

export interface SweepPolicyStore {
  /** The recorded policy; undefined before the registrar first ran. */
  read(): Promise<RecordedSweepPolicy | undefined>;
  /**
   * Records the policy when it differs from the stored one: one read per call, a write only
   * after a configuration change. Safe to repeat and to race: the write is conditional on the
   * values it replaces, so two writers of the same policy both end at 'unchanged' or
   * 'recorded', never an error.
   */
  record(policy: EffectiveSweepPolicy, now: EpochMillis): Promise<'recorded' | 'unchanged'>;
}

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
