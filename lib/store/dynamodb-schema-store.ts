import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SchemaRecord } from '../domain/table-schema.ts';
import type { SchemaStore } from '../registration/schema-store.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import { PARTITIONS } from './table-definition.ts';

/** The table's record of its own shape (lib/domain/table-schema.ts). */
export const SCHEMA_KEY = { pk: PARTITIONS.config, sk: 'schema' } as const;

/**
 * `CONFIG / schema`: one small item, read once per sweeper run (and at `npm start`), written
 * when a release first runs on the table and after each page of a migration. Every write is
 * conditional on the revision read, so two runners (an old and a new sweeper during a deploy,
 * or `registrar migrate run` beside the sweeper) never undo each other's progress.
 */
export class DynamoDbSchemaStore implements SchemaStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async read(): Promise<SchemaRecord | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#table, Key: SCHEMA_KEY, ConsistentRead: true }),
    );
    if (!Item) return undefined;
    const { pk: _pk, sk: _sk, ...record } = Item;
    return record as unknown as SchemaRecord;
  }

  async write(record: SchemaRecord, expected: number | undefined): Promise<'written' | 'conflict'> {
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#table,
          Item: { ...SCHEMA_KEY, ...record, revision: (expected ?? 0) + 1 },
          ConditionExpression:
            expected === undefined ? 'attribute_not_exists(pk)' : 'revision = :expected',
          ...(expected === undefined
            ? {}
            : { ExpressionAttributeValues: { ':expected': expected } }),
        }),
      );
      return 'written';
    } catch (error) {
      if (isConditionFailed(error)) return 'conflict';
      throw error;
    }
  }
}
