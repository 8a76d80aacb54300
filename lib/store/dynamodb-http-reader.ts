import type { HttpRequest } from '@smithy/protocol-http';
import { SignedHttpClient } from '../aws/signed-http.ts';

/**
 * One DynamoDB operation, GetItem, as a signed HTTP POST: what the token authorizer needs
 * (one consistent read per connect), without the SDK client, its schema serde and its
 * middleware (issue 27: the authorizer's bundle, ~265 KB with the client). The request is the
 * one the SDK sends (protocol awsJson1_0, SigV4 by the SDK's own signer); a test holds the two
 * side by side. Retries throttling, 5xx and network errors as the SDK's standard mode does (3
 * attempts, jittered exponential backoff from 100 ms).
 */
export interface HttpReaderOptions {
  region: string;
  /** Set for dynalite or DynamoDB Local; unset on AWS (the Region's public endpoint). */
  endpoint?: string;
  credentials: () => Promise<{
    accessKeyId: string;
    secretAccessKey: string;
    sessionToken?: string;
  }>;
  /** Signing time; tests pass a fixed one. */
  now?: () => Date;
}

/** A DynamoDB error answered as such: its type (`ResourceNotFoundException`) and message. */
export class DynamoDbHttpError extends Error {
  readonly type: string;
  readonly status: number;
  constructor(type: string, message: string, status: number) {
    super(`DynamoDB ${type}: ${message}`);
    this.type = type;
    this.status = status;
  }
}

const RETRIED_TYPES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
]);

export class DynamoDbHttpReader {
  readonly #http: SignedHttpClient;

  constructor(options: HttpReaderOptions) {
    this.#http = new SignedHttpClient({
      endpoint: options.endpoint ?? `https://dynamodb.${options.region}.amazonaws.com/`,
      region: options.region,
      service: 'dynamodb',
      credentials: options.credentials,
      ...(options.now ? { now: options.now } : {}),
      retryable: (answer) => RETRIED_TYPES.has(errorType(answer.text)),
    });
  }

  /** The item under `key` (string key attributes), read consistently or not. */
  async getItem(
    table: string,
    key: Record<string, string>,
    consistent: boolean,
  ): Promise<Record<string, unknown> | undefined> {
    const body = JSON.stringify({
      TableName: table,
      Key: Object.fromEntries(Object.entries(key).map(([name, value]) => [name, { S: value }])),
      ConsistentRead: consistent,
    });
    const answer = (await this.#send('GetItem', body)) as { Item?: Record<string, AttributeValue> };
    return answer.Item ? (unmarshall({ M: answer.Item }) as Record<string, unknown>) : undefined;
  }

  /** The signed request for `operation` with `body`, as it goes on the wire. */
  signed(operation: string, body: string): Promise<HttpRequest> {
    return this.#http.sign('POST', '/', headersOf(operation), body);
  }

  async #send(operation: string, body: string): Promise<unknown> {
    const { status, text } = await this.#http.send('POST', '/', headersOf(operation), body);
    const json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    if (status < 300) return json;
    const message = String(json.message ?? json.Message ?? '');
    throw new DynamoDbHttpError(errorType(text) || `HTTP ${status}`, message, status);
  }
}

function headersOf(operation: string): Record<string, string> {
  return {
    'content-type': 'application/x-amz-json-1.0',
    'x-amz-target': `DynamoDB_20120810.${operation}`,
  };
}

/** `com.amazonaws.dynamodb.v20120810#ThrottlingException` -> `ThrottlingException`. */
function errorType(text: string): string {
  const match = /"__type"\s*:\s*"([^"]*)"/.exec(text);
  return match?.[1]?.split('#').pop() ?? '';
}

/** DynamoDB's JSON attribute values, as GetItem answers them. */
export type AttributeValue =
  | { S: string }
  | { N: string }
  | { BOOL: boolean }
  | { NULL: true }
  | { M: Record<string, AttributeValue> }
  | { L: AttributeValue[] }
  | { SS: string[] }
  | { NS: string[] }
  | { B: string }
  | { BS: string[] };

/** As the document client unmarshalls (numbers as numbers, sets as Sets, binary as bytes). */
export function unmarshall(value: AttributeValue): unknown {
  if ('S' in value) return value.S;
  if ('N' in value) return Number(value.N);
  if ('BOOL' in value) return value.BOOL;
  if ('NULL' in value) return null;
  if ('M' in value) {
    return Object.fromEntries(Object.entries(value.M).map(([k, v]) => [k, unmarshall(v)]));
  }
  if ('L' in value) return value.L.map(unmarshall);
  if ('SS' in value) return new Set(value.SS);
  if ('NS' in value) return new Set(value.NS.map(Number));
  if ('B' in value) return Buffer.from(value.B, 'base64');
  return new Set(value.BS.map((b) => Buffer.from(b, 'base64')));
}
