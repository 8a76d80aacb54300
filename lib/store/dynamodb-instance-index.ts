import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { deletedEvent } from '../domain/entry-events.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { InstanceStore } from '../registration/catalog-store.ts';
import type { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import type { DynamoDbEntryHistory } from './dynamodb-entry-history.ts';
import { instanceGoneDelete } from './dynamodb-entry-writes.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { decodeEntry } from './item-codec.ts';
import { INSTANCE_INDEX } from './table-definition.ts';

/**
 * The sparse `instance` index (keys only): the entries whose newest connect came from an EC2
 * instance, for the EC2 state-change function's removals.
 */
export class DynamoDbInstanceIndex implements InstanceStore {
  readonly #table: RegistryTable;
  readonly #counters: DynamoDbCellCounters;
  readonly #history: DynamoDbEntryHistory;

  constructor(table: RegistryTable, counters: DynamoDbCellCounters, history: DynamoDbEntryHistory) {
    this.#table = table;
    this.#counters = counters;
    this.#history = history;
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

  /**
   * Deletes the entry only while its newest connect is still that instance's, and keeps its
   * events with why it went (a history item; `at`: when EC2 said so, else now).
   */
  async removeInstanceEntry(
    ref: ObjectRef,
    instanceId: string,
    at?: EpochMillis,
  ): Promise<'deleted' | 'kept'> {
    try {
      const output = await this.#table.client.send(
        new DeleteCommand(instanceGoneDelete(this.#table.name, ref, instanceId)),
      );
      if (output.Attributes) {
        await this.#counters.countRemoval(decodeEntry(output.Attributes), 'instance-gone');
        await this.#history.recordDeletion(
          output.Attributes,
          deletedEvent(at ?? Date.now(), { kind: 'instance-gone', instanceId }),
        );
      }
      return 'deleted';
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return 'kept';
    }
  }
}
