import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type {
  ConnectionRecord,
  ConnectionRecordStore,
} from '../registration/entry-lifecycle-store.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { connectionKey, decodeConnectionRecord, encodeConnectionRecord } from './item-codec.ts';

/**
 * IAM mode's `CONN#<connectionId>` records: connection -> its entry, for the events after
 * `$connect` (token mode carries the entry in the authorizer's context instead). They expire
 * by TTL.
 */
export class DynamoDbConnectionRecords implements ConnectionRecordStore {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  async put(record: ConnectionRecord): Promise<void> {
    await this.#table.client.send(
      new PutCommand({ TableName: this.#table.name, Item: encodeConnectionRecord(record) }),
    );
  }

  async getConnection(connectionId: string): Promise<ConnectionRecord | undefined> {
    // Consistent: a $disconnect or health report can follow its $connect by milliseconds.
    const item = await this.#table.get(connectionKey(connectionId));
    return item ? decodeConnectionRecord(item) : undefined;
  }

  async forgetConnection(connectionId: string): Promise<void> {
    await this.#table.client.send(
      new DeleteCommand({ TableName: this.#table.name, Key: connectionKey(connectionId) }),
    );
  }
}
