import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type Config, readConfig } from '../config.ts';
import type { EpochMillis } from '../domain/model.ts';
import { createDocumentClient, type StoreTransport } from '../store/dynamodb-client.ts';

/**
 * What each Lambda function is given, built from the environment by its own file in this
 * folder: a function's bundle holds only the code its wiring names (issue 27). The authorizer
 * reads tokens and nothing else, so it carries no registry store, no management API client and
 * no certificates; only `$connect` in IAM mode loads certificates. Each file imports only the
 * adapters it builds: esbuild keeps every module a bundle imports, used or not.
 */

/** The configuration and one document client over the table: what every wiring starts from. */
export interface TableWiring {
  config: Config;
  client: DynamoDBDocumentClient;
}

export function tableWiring(
  env: Record<string, string | undefined>,
  /** How the local runtime's clients reach its store; Lambda passes nothing. */
  transport: StoreTransport = {},
): TableWiring {
  const config = readConfig(env);
  const client = createDocumentClient({
    region: config.region,
    ...(config.dynamoDbEndpoint === undefined
      ? {}
      : { endpoint: config.dynamoDbEndpoint, transport }),
  });
  return { config, client };
}

export const now = (): EpochMillis => Date.now();
