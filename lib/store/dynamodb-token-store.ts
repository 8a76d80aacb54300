import { isDeepStrictEqual } from 'node:util';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { TokenStore } from '../auth/token-store.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { StoredToken } from '../domain/stored-token.ts';
import { isConditionFailed, readPartition } from './dynamodb-client.ts';
import { decodeToken, encodeToken, TOKEN_PARTITION, tokenKey } from './item-codec.ts';

/** Join tokens under one partition (`TOKEN` / `<id>`): few, read by id, listed by the operator. */
export class DynamoDbTokenStore implements TokenStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  /**
   * Never overwrites: a colliding id would otherwise replace a token, and could silently undo a
   * revocation. Ids are random, so a collision is a bug worth failing on. Retry-safe: when the
   * SDK retries a put whose first attempt was applied but answered with an error, the retry
   * fails the condition; a stored token equal to ours, secret hash included (256 random bits,
   * so no one else's), means the write succeeded: the operator gets the token instead of an error and
   * an active token nobody saw.
   */
  async putToken(token: StoredToken): Promise<void> {
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#table,
          Item: encodeToken(token),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const stored = await this.getToken(token.id);
      if (stored && isDeepStrictEqual(stored, token)) return;
      throw new Error(`join token '${token.id}' already exists`);
    }
  }

  async getToken(id: string): Promise<StoredToken | undefined> {
    // Consistent: a revocation must take effect for the very next connect.
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#table, Key: tokenKey(id), ConsistentRead: true }),
    );
    return Item ? decodeToken(Item) : undefined;
  }

  listTokens(): Promise<StoredToken[]> {
    return readPartition(this.#client, this.#table, TOKEN_PARTITION, decodeToken);
  }

  /** Keeps the first revocation time when revoked twice. */
  async revokeToken(id: string, at: EpochMillis): Promise<boolean> {
    try {
      await this.#client.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: tokenKey(id),
          UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :at)',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':at': at },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }
}
