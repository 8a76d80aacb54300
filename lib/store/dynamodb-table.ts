import {
  type DynamoDBDocumentClient,
  GetCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { ObjectRef } from '../domain/model.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import type { EntryItem, Item } from './item-codec.ts';
import { entryKey } from './item-codec.ts';

/**
 * The registry table as the adapters share it: the client, the table's name, and the two
 * operations every adapter needs (a consistent read, and a conditional write whose lost
 * condition is an outcome). Each adapter owns its own keys and conditions.
 */
export class RegistryTable {
  readonly client: DynamoDBDocumentClient;
  readonly name: string;

  constructor(client: DynamoDBDocumentClient, name: string) {
    this.client = client;
    this.name = name;
  }

  /** Consistent: a $disconnect or health report can follow its $connect by milliseconds. */
  async get(key: Record<string, string>): Promise<Item | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.name, Key: key, ConsistentRead: true }),
    );
    return Item;
  }

  getEntryItem(ref: ObjectRef): Promise<EntryItem | undefined> {
    return this.get(entryKey(ref)) as Promise<EntryItem | undefined>;
  }

  /** The write's output, or undefined when its condition failed. */
  async tryUpdate(input: UpdateCommandInput) {
    try {
      return await this.client.send(new UpdateCommand(input));
    } catch (error) {
      if (isConditionFailed(error)) return undefined;
      throw error;
    }
  }
}
