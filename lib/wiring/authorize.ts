import type { Dependencies } from '../dependencies.ts';
import { DynamoDbTokenStore } from '../store/dynamodb-token-store.ts';
import { now, tableWiring } from './table.ts';

/** The token authorizer: the join tokens, nothing else. */
export type AuthorizeDependencies = Pick<Dependencies, 'tokens' | 'now'>;

export function authorizeDependencies(
  env: Record<string, string | undefined>,
): AuthorizeDependencies {
  const { config, client } = tableWiring(env);
  return { tokens: new DynamoDbTokenStore(client, config.tableName), now };
}
