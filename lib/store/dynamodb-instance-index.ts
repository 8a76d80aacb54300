import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import type { ObjectRef } from '../domain/model.ts';
import type { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import { instanceGoneDelete } from './dynamodb-entry-writes.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { decodeEntry } from './item-codec.ts';
import { INSTANCE_INDEX } from './table-definition.ts';

/**
 * The sparse `instance` index (keys only): the entries whose newest connect came from an EC2
 * instance, for the EC2 state-change function's removals.
 */
export class DynamoDbInstanceIndex {
  readonly #table: RegistryTable;
  readonly #counters: DynamoDbCellCounters;

  constructor(table: RegistryTable, counters: DynamoDbCellCounters) {
    this.#table = table;
    this.#counters = counters;
  }

  async entriesOfInstance(instanceId: string): Promise<ObjectRef[]> {
    const refs: ObjectRef[] = [];
    const items = queryItems(this.#table.client, {
      TableName: this.#table.name,
      IndexName: INSTANCE_INDEX.name,
      KeyConditionExpression: 'instanceId = :id',
      ExpressionAttributeValues: { ':id': instanceId },
    });
    for await (const item of items) {
      const pk = String(item.pk);
      const sk = String(item.sk);
      refs.push({ namespace: pk.slice(pk.indexOf('#') + 1), name: sk.slice(sk.indexOf('#') + 1) });
    }
    return refs;
  }

  /** Deletes the entry only while its newest connect is still that instance's. */
  async removeInstanceEntry(ref: ObjectRef, instanceId: string): Promise<'deleted' | 'kept'> {
    try {
      const output = await this.#table.client.send(
        new DeleteCommand(instanceGoneDelete(this.#table.name, ref, instanceId)),
      );
      if (output.Attributes) {
        await this.#counters.countRemoval(decodeEntry(output.Attributes), 'instance-gone');
      }
      return 'deleted';
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return 'kept';
    }
  }
}
