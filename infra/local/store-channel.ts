import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import type { MessagePort } from 'node:worker_threads';
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import {
  type HttpHandler,
  type HttpHandlerOptions,
  type HttpRequest,
  HttpResponse,
} from '@smithy/protocol-http';

/**
 * The runtime's own DynamoDB requests reach the store thread over a `MessagePort` instead of
 * HTTP on loopback: the SDK builds and parses each request as it would for DynamoDB (its whole
 * middleware stack: endpoint, retries, serialisation), and dynalite answers it through its own
 * request handler, but neither side opens a socket or parses HTTP. Loopback HTTP was about a
 * quarter of the main thread's CPU in a burst of connects (docs/benchmarks.md, "Local end to
 * end"). Everything outside the runtime (the CLI, the dashboard, benches) still uses the store's
 * HTTP endpoint, signed as before.
 *
 * Requests on the channel are not signed: only this process can reach it, and dynalite checks
 * that a signature is present but never what it says. The store side stands a placeholder in.
 */

/**
 * A request as the SDK sends it, as a tuple: a message is cloned to the other thread, and a
 * flat array of strings clones in a fraction of an object's time.
 */
export type StoreRequest = [
  id: number,
  method: string,
  path: string,
  /** Lower-case name, value, name, value, ... */
  headers: string[],
  body: string,
];

/** dynalite's answer, as its HTTP server would have sent it. */
export type StoreResponse = [id: number, statusCode: number, headers: string[], body: string];

type RequestListener = (request: EventEmitter, response: unknown) => void;

/**
 * The SDK's SigV4 scheme (the identity still resolves) with a signer that leaves the request as
 * it is: SigV4 (hashing the body, an HMAC chain) was a tenth of the main thread's CPU.
 */
export const channelAuthSchemes: NonNullable<DynamoDBClientConfig['httpAuthSchemes']> = [
  {
    schemeId: 'aws.auth#sigv4',
    identityProvider: (config) => config.getIdentityProvider('aws.auth#sigv4'),
    signer: { sign: async (request) => request },
  },
];

/** What the store side puts in place of a signature: the shape dynalite checks for. */
const PLACEHOLDER_AUTHORIZATION =
  'AWS4-HMAC-SHA256 Credential=store-channel/20000101/local/dynamodb/aws4_request, ' +
  'SignedHeaders=host, Signature=none';

/** Headers sent as `name, value, name, value, ...`, as an object again. */
function headersOf(flat: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) headers[flat[i] as string] = flat[i + 1] as string;
  return headers;
}

/**
 * Sends what one turn of the event loop produced as one message: a message wakes the other
 * thread, and on this VM a wake-up cost more than cloning a request (about 35 us each, 8
 * requests a registration), while a burst's requests come many to a turn.
 */
function batchedSender<T>(port: MessagePort): (item: T) => void {
  let batch: T[] = [];
  const flush = () => {
    const sending = batch;
    batch = [];
    port.postMessage(sending);
  };
  return (item) => {
    if (batch.length === 0) setImmediate(flush);
    batch.push(item);
  };
}

/**
 * Store side: answers every request arriving on `port` with `server`'s own request listener
 * (dynalite's), handing it a request and a response that are not sockets.
 */
export function answerOverPort(server: Server, port: MessagePort): void {
  const listener = server.listeners('request')[0] as RequestListener | undefined;
  if (!listener) throw new Error('the store has no request handler to answer with');
  const send = batchedSender<StoreResponse>(port);
  const answer = ([id, method, url, flatHeaders, body]: StoreRequest) => {
    const headers = headersOf(flatHeaders);
    if (headers.authorization === undefined) {
      headers.authorization = PLACEHOLDER_AUTHORIZATION;
      headers['x-amz-date'] ??= '20000101T000000Z';
    }
    const incoming = Object.assign(new EventEmitter(), { method, url, headers });
    const answerHeaders: string[] = [];
    const response = {
      statusCode: 200,
      contentType: undefined as string | undefined,
      setHeader(name: string, value: unknown) {
        answerHeaders.push(name.toLowerCase(), String(value));
      },
      end(text?: string) {
        send([id, response.statusCode, answerHeaders, text ?? '']);
      },
    };
    listener(incoming, response);
    if (body) incoming.emit('data', Buffer.from(body));
    incoming.emit('end');
  };
  port.on('message', (requests: StoreRequest[]) => {
    for (const request of requests) answer(request);
  });
}

interface Pending {
  resolve: (answer: StoreResponse) => void;
  reject: (error: Error) => void;
}

const encoder = new TextEncoder();

function queryString(query: HttpRequest['query']): string {
  const search = new URLSearchParams();
  for (const key in query) {
    const value = query[key];
    for (const one of Array.isArray(value) ? value : [value]) search.append(key, one ?? '');
  }
  return search.size > 0 ? `?${search}` : '';
}

function bodyText(body: unknown): string {
  if (body === undefined || body === null) return '';
  if (typeof body === 'string') return body;
  // A view, not Buffer.from(body): the SDK's JSON body is a Uint8Array whose valueOf() is its
  // text, which Buffer.from would call (and the SDK warns about on stderr).
  if (body instanceof Uint8Array) {
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  }
  throw new Error(`the store channel sends text bodies only, not ${typeof body}`);
}

/**
 * Runtime side: an SDK `requestHandler` that sends each request over `port` to the store thread.
 * When the store thread goes away, every request in flight (and after) fails with `whenGone`'s
 * message rather than waiting for an answer that cannot come.
 */
export class StoreChannelHandler implements HttpHandler {
  readonly metadata = { handlerProtocol: 'store-channel' };
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private gone: Error | undefined;
  private readonly send: (request: StoreRequest) => void;
  private readonly whenGone: string;

  constructor(port: MessagePort, whenGone: string) {
    this.send = batchedSender<StoreRequest>(port);
    this.whenGone = whenGone;
    port.on('message', (answers: StoreResponse[]) => {
      for (const answer of answers) {
        const [id] = answer;
        const waiting = this.pending.get(id);
        this.pending.delete(id);
        waiting?.resolve(answer);
      }
    });
    port.on('close', () => this.close());
    // The store thread keeps the runtime alive while it runs; the channel itself does not.
    port.unref();
  }

  async handle(
    request: HttpRequest,
    options: HttpHandlerOptions = {},
  ): Promise<{ response: HttpResponse }> {
    if (this.gone) throw this.gone;
    // The SDK passes the caller's own signal through: in Node, a global AbortSignal.
    const abortSignal = options.abortSignal as AbortSignal | undefined;
    if (abortSignal?.aborted) throw abortError();
    const id = this.nextId;
    this.nextId += 1;
    const answer = await new Promise<StoreResponse>((resolve, reject) => {
      const onAbort = () => {
        this.pending.delete(id);
        reject(abortError());
      };
      abortSignal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        resolve: (value) => {
          abortSignal?.removeEventListener('abort', onAbort);
          resolve(value);
        },
        reject,
      });
      const headers: string[] = [];
      for (const name in request.headers) {
        headers.push(name.toLowerCase(), request.headers[name] as string);
      }
      this.send([
        id,
        request.method,
        `${request.path}${queryString(request.query)}`,
        headers,
        bodyText(request.body),
      ]);
    });
    const [, statusCode, flatHeaders, body] = answer;
    return {
      response: new HttpResponse({
        statusCode,
        headers: headersOf(flatHeaders),
        body: encoder.encode(body),
      }),
    };
  }

  /** Every request still waiting fails; later ones fail at once. */
  close(): void {
    this.gone ??= new Error(this.whenGone);
    for (const waiting of this.pending.values()) waiting.reject(this.gone);
    this.pending.clear();
  }

  /** Called by each SDK client's `destroy()`: the channel outlives the clients that share it. */
  destroy(): void {}

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): object {
    return {};
  }
}

function abortError(): Error {
  const error = new Error('Request aborted');
  error.name = 'AbortError';
  return error;
}
