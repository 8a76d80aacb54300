import { createHash, createHmac } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

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

const ATTEMPTS = 3;
const RETRIED_TYPES = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
]);

export class DynamoDbHttpReader {
  readonly #url: URL;
  readonly #signer: SignatureV4;
  readonly #agent: HttpAgent;
  readonly #now: () => Date;

  constructor(options: HttpReaderOptions) {
    this.#url = new URL(options.endpoint ?? `https://dynamodb.${options.region}.amazonaws.com/`);
    this.#signer = new SignatureV4({
      credentials: options.credentials,
      region: options.region,
      service: 'dynamodb',
      sha256: NodeSha256,
    });
    // Kept alive: the warm invocations reuse the connection, as the SDK's handler does.
    this.#agent =
      this.#url.protocol === 'http:'
        ? new HttpAgent({ keepAlive: true })
        : new HttpsAgent({ keepAlive: true });
    this.#now = options.now ?? (() => new Date());
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
  async signed(operation: string, body: string): Promise<HttpRequest> {
    const request = new HttpRequest({
      method: 'POST',
      protocol: this.#url.protocol,
      hostname: this.#url.hostname,
      ...(this.#url.port ? { port: Number(this.#url.port) } : {}),
      path: this.#url.pathname || '/',
      headers: {
        host: this.#url.host,
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `DynamoDB_20120810.${operation}`,
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
    });
    return (await this.#signer.sign(request, { signingDate: this.#now() })) as HttpRequest;
  }

  async #send(operation: string, body: string): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        const request = await this.signed(operation, body);
        const { status, text } = await this.#post(request);
        const json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
        if (status < 300) return json;
        const type = String(json.__type ?? `HTTP ${status}`)
          .split('#')
          .pop() as string;
        const message = String(json.message ?? json.Message ?? '');
        throw new DynamoDbHttpError(type, message, status);
      } catch (error) {
        if (attempt >= ATTEMPTS || !retryable(error)) throw error;
        // Full jitter, as the SDK's standard retry strategy: up to 100 ms, 200 ms.
        await sleep(Math.random() * 100 * 2 ** (attempt - 1));
      }
    }
  }

  #post(request: HttpRequest): Promise<{ status: number; text: string }> {
    const send = request.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise((resolve, reject) => {
      const outgoing = send(
        {
          method: request.method,
          hostname: request.hostname,
          ...(request.port ? { port: request.port } : {}),
          path: request.path,
          headers: request.headers,
          agent: this.#agent,
          timeout: 5_000,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          response.on('error', reject);
        },
      );
      outgoing.on('timeout', () => outgoing.destroy(new Error('DynamoDB did not answer in 5 s')));
      outgoing.on('error', reject);
      outgoing.end(request.body as string);
    });
  }
}

function retryable(error: unknown): boolean {
  if (error instanceof DynamoDbHttpError) {
    return error.status >= 500 || RETRIED_TYPES.has(error.type);
  }
  // A network error or a timeout: the request may not have reached DynamoDB; a read is safe.
  return error instanceof Error && !(error instanceof SyntaxError);
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

/** The signer's hash, from node:crypto (the SDK's Node build uses the same). */
class NodeSha256 {
  readonly #hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;
  constructor(secret?: Bytes) {
    this.#hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: Bytes): void {
    this.#hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
}

type Bytes = string | ArrayBuffer | ArrayBufferView;

function bytes(data: Bytes): string | Uint8Array {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}
