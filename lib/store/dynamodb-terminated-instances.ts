import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { TerminatedInstances } from '../auth/terminated-instance-store.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { EXPIRES_AT_ATTRIBUTE } from './item-codec.ts';

/**
 * Instances EC2 reported gone, remembered so that what they leave behind cannot register them
 * again. The instance identity document never expires, and the credentials EC2 handed the
 * instance stay valid after it terminated until they expire: whoever copied both (a backup of
 * the disk, a process that read IMDS) could otherwise sign a connect as the instance, with
 * its genuine document, and register its address.
 *
 * How long: the role credentials EC2 delivers to an instance are temporary STS role-session
 * credentials; EC2 rotates them and offers new ones at least 5 minutes before the old expire
 * (EC2 User Guide, "Retrieve security credentials from instance metadata"); they are seen to
 * last about 6 h, and no role session lasts longer than 12 h (a role's maximum session
 * duration). A record lives 24 h, twice the longest: the last credentials of a terminated
 * instance expire while its record still refuses them, and API Gateway refuses a request
 * signed with expired credentials from then on. Instance ids are never reused, so a record
 * that DynamoDB's TTL deletes late (it may take days) refuses nobody else.
 */
export const TERMINATED_RECORD_TTL_MS = 24 * 3_600_000;

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
