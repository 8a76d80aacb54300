import type { TokenStore } from '../auth/token-store.ts';
import type { StoredToken } from '../domain/stored-token.ts';
import type { DynamoDbHttpReader } from './dynamodb-http-reader.ts';
import { decodeToken, tokenKey } from './item-codec.ts';

/**
 * The token authorizer's one read, over the SDK-less reader (dynamodb-http-reader.ts): the
 * same item, decoded as DynamoDbTokenStore decodes it.
 */
export class HttpTokenReader implements Pick<TokenStore, 'getToken'> {
  readonly #reader: DynamoDbHttpReader;
  readonly #table: string;

  constructor(reader: DynamoDbHttpReader, tableName: string) {
    this.#reader = reader;
    this.#table = tableName;
  }

  async getToken(id: string): Promise<StoredToken | undefined> {
    // Consistent: a revocation must take effect for the very next connect.
    const item = await this.#reader.getItem(this.#table, { ...tokenKey(id) }, true);
    return item ? decodeToken(item) : undefined;
  }
}
