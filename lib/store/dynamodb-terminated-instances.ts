import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  TERMINATED_RECORD_TTL_MS,
  type TerminatedInstances,
} from '../auth/terminated-instance-store.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { EXPIRES_AT_ATTRIBUTE } from './item-codec.ts';

/**
 * `TERMINATED#<instance id>` / `TERMINATED`: one partition per instance, so a mass
 * termination spreads its writes and a connect's read touches no shared key.
 */
export const TERMINATED_PREFIX = 'TERMINATED#';

export function terminatedKey(instanceId: string) {
  return { pk: `${TERMINATED_PREFIX}${instanceId}`, sk: 'TERMINATED' };
}

/**
 * The terminated-instance records (lib/auth/terminated-instances.ts): written by the EC2
 * state-change function, read by IAM-mode connects (one consistent GetItem, 1 read unit: a
 * connect right after the event must see it), and removed by the table's TTL.
 */
export class DynamoDbTerminatedInstances implements TerminatedInstances {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  async recordTerminated(instanceId: string, at: EpochMillis): Promise<void> {
    await this.#table.client.send(
      new UpdateCommand({
        TableName: this.#table.name,
        Key: terminatedKey(instanceId),
        // A repeated or late event keeps the first time; the record lives from the latest.
        UpdateExpression:
          'SET terminatedAt = if_not_exists(terminatedAt, :at), #expires = :expires',
        ExpressionAttributeNames: { '#expires': EXPIRES_AT_ATTRIBUTE },
        ExpressionAttributeValues: {
          ':at': at,
          ':expires': Math.ceil((at + TERMINATED_RECORD_TTL_MS) / 1000),
        },
      }),
    );
  }

  async terminatedAt(instanceId: string): Promise<EpochMillis | undefined> {
    const { Item } = await this.#table.client.send(
      new GetCommand({
        TableName: this.#table.name,
        Key: terminatedKey(instanceId),
        ConsistentRead: true,
      }),
    );
    return typeof Item?.terminatedAt === 'number' ? Item.terminatedAt : undefined;
  }
}
