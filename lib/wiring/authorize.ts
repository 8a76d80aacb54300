import type { TokenStore } from '../auth/token-store.ts';
import { readConfig } from '../config.ts';
import { credentialsFromEnvironment } from '../lambda-credentials.ts';
import { DynamoDbHttpReader } from '../store/dynamodb-http-reader.ts';
import { HttpTokenReader } from '../store/http-token-reader.ts';

/** The token authorizer: one token read per connect, nothing else. */
export interface AuthorizeDependencies {
  tokens: Pick<TokenStore, 'getToken'>;
  now: () => number;
}

/**
 * No SDK client: the authorizer's one GetItem goes through a signed HTTP request
 * (lib/store/dynamodb-http-reader.ts), which keeps its bundle small (issue 27). With an
 * endpoint (dynalite, DynamoDB Local) the credentials are dummies, as the SDK client's are.
 */
export function authorizeDependencies(
  env: Record<string, string | undefined>,
): AuthorizeDependencies {
  const config = readConfig(env);
  const local = config.dynamoDbEndpoint !== undefined;
  const reader = new DynamoDbHttpReader({
    region: config.region,
    ...(local ? { endpoint: config.dynamoDbEndpoint } : {}),
    credentials: async () =>
      local ? { accessKeyId: 'local', secretAccessKey: 'local' } : credentialsFromEnvironment(env),
  });
  return { tokens: new HttpTokenReader(reader, config.tableName), now: () => Date.now() };
}
