import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  type DynamoDBClientConfig,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  QueryCommand,
  type QueryCommandInput,
  ScanCommand,
  type ScanCommandInput,
} from '@aws-sdk/lib-dynamodb';

/** How a client reaches a local store: the parts of the SDK's config the local runtime sets. */
export type StoreTransport = Pick<DynamoDBClientConfig, 'requestHandler' | 'httpAuthSchemes'>;

export interface DynamoDbClientOptions {
  region: string;
  /** Set for dynalite or DynamoDB Local; unset on AWS (the SDK resolves the endpoint). */
  endpoint?: string;
  /**
   * With an endpoint: how requests reach it and how they are signed. The local runtime passes
   * its store thread's channel (infra/local/store-channel.ts); unset, the SDK's HTTP handler
   * and SigV4.
   */
  transport?: StoreTransport;
}

/**
 * The low-level client. With an endpoint (the local runtime and tests) the credentials are
 * static dummies: dynalite and DynamoDB Local accept any signature, and a developer without an
 * AWS account (or with an expired SSO session) must still be able to run `npm start`.
 */
export function createDynamoDbClient(options: DynamoDbClientOptions): DynamoDBClient {
  if (options.endpoint === undefined) return new DynamoDBClient({ region: options.region });
  return new DynamoDBClient({
    region: options.region,
    endpoint: options.endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    ...options.transport,
  });
}

/**
 * The document client the stores use. `removeUndefinedValues` lets optional fields of the
 * domain objects (`message?`, `network?`) be passed as they are instead of failing marshalling.
 * `convertClassInstanceToMap`: the marshaller tells a plain object by `value.constructor.name`,
 * so a map with a key named `constructor` (a valid label key an agent may send:
 * `--label constructor=x`) is not recognised as one and would fail the write (a 500 any tenant
 * could cause at will); with the option it is written as the map it is.
 */
export function createDocumentClient(options: DynamoDbClientOptions): DynamoDBDocumentClient {
  return documentClientFor(createDynamoDbClient(options));
}

/** Wraps an existing low-level client (one whose middleware stack a test instruments). */
export function documentClientFor(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
  });
}

/**
 * Every item of a Query, following `LastEvaluatedKey` across pages. With `limit`, stops after
 * that many items and asks each page for no more than are still wanted, so a bounded read (the
 * sweeper's) never reads past its budget.
 */
export async function* queryItems(
  client: DynamoDBDocumentClient,
  input: QueryCommandInput,
  limit = Number.POSITIVE_INFINITY,
): AsyncGenerator<Record<string, unknown>> {
  let remaining = limit;
  let startKey: Record<string, unknown> | undefined;
  do {
    if (remaining <= 0) return;
    const page = await client.send(
      new QueryCommand({
        ...input,
        ...(Number.isFinite(remaining) ? { Limit: remaining } : {}),
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    for (const item of page.Items ?? []) {
      remaining -= 1;
      yield item;
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/** Every item of one partition, decoded: the token and policy lists. */
export async function readPartition<T>(
  client: DynamoDBDocumentClient,
  tableName: string,
  partitionKey: string,
  decode: (item: Record<string, unknown>) => T,
): Promise<T[]> {
  const decoded: T[] = [];
  const items = queryItems(client, {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': partitionKey },
  });
  for await (const item of items) decoded.push(decode(item));
  return decoded;
}

/** Every item of a Scan, following `LastEvaluatedKey`. Operator paths only: it reads the table. */
export async function* scanItems(
  client: DynamoDBDocumentClient,
  input: ScanCommandInput,
): AsyncGenerator<Record<string, unknown>> {
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ ...input, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
    );
    yield* page.Items ?? [];
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/** Whether a write lost its condition: a race lost or a rule refused, never an error. */
export function isConditionFailed(error: unknown): boolean {
  return error instanceof ConditionalCheckFailedException;
}
