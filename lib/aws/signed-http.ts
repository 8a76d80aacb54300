import type { Agent as HttpAgent } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256 } from './node-sha256.ts';

/**
 * An AWS API call as a SigV4-signed HTTP request, without an SDK client: for the few calls a
 * Lambda function makes on its hot path (the authorizer's GetItem, the liveness check's
 * GetConnection), whose clients were most of a bundle (issue 27). The SDK's own signer signs;
 * the callers' tests hold each request beside the SDK client's. Retries what the SDK's
 * standard mode retries (network errors, 5xx, throttling) with jittered exponential backoff.
 */
export interface SignedHttpOptions {
  /** Base URL; a path in it (an API stage) prefixes every request's. */
  endpoint: string | (() => string);
  region: string;
  /** The signing name: `dynamodb`, `execute-api`. */
  service: string;
  credentials: () => Promise<{
    accessKeyId: string;
    secretAccessKey: string;
    sessionToken?: string;
  }>;
  /** Attempts in all (default 3). */
  attempts?: number;
  /** Per attempt, connect and answer (default 5 s). */
  timeoutMs?: number;
  /** Whether an answer is worth another attempt (besides network errors and 5xx). */
  retryable?: (answer: SignedHttpAnswer) => boolean;
  /** Signing time; tests pass a fixed one. */
  now?: () => Date;
}

export interface SignedHttpAnswer {
  status: number;
  text: string;
  /** Response headers, names in lower case. */
  headers: Record<string, string | string[] | undefined>;
}

export class SignedHttpClient {
  readonly #options: SignedHttpOptions;
  readonly #signer: SignatureV4;
  #agent: { url: URL; agent: HttpAgent } | undefined;

  constructor(options: SignedHttpOptions) {
    this.#options = options;
    this.#signer = new SignatureV4({
      credentials: options.credentials,
      region: options.region,
      service: options.service,
      sha256: NodeSha256,
    });
  }

  /** The signed request, as it goes on the wire. `path` is below the endpoint's own path. */
  async sign(
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<HttpRequest> {
    const url = this.#url();
    const base = url.pathname.replace(/\/$/, '');
    const request = new HttpRequest({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: `${base}${path}` || '/',
      headers: {
        host: url.host,
        ...headers,
        ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
      },
      ...(body === undefined ? {} : { body }),
    });
    const signingDate = (this.#options.now ?? (() => new Date()))();
    return (await this.#signer.sign(request, { signingDate })) as HttpRequest;
  }

  /** Sends with retries; the last answer (any status) or the last network error. */
  async send(
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<SignedHttpAnswer> {
    const attempts = this.#options.attempts ?? 3;
    for (let attempt = 1; ; attempt++) {
      let answer: SignedHttpAnswer | undefined;
      try {
        answer = await this.#post(await this.sign(method, path, headers, body));
      } catch (error) {
        // A network error or a timeout: the callers' requests are safe to repeat.
        if (attempt >= attempts) throw error;
      }
      if (answer) {
        const again = answer.status >= 500 || (this.#options.retryable?.(answer) ?? false);
        if (!again || attempt >= attempts) return answer;
      }
      // Full jitter, as the SDK's standard retry strategy: up to 100 ms, 200 ms, ...
      await sleep(Math.random() * 100 * 2 ** (attempt - 1));
    }
  }

  /** Closes the kept-alive connections (a client made for one batch of calls). */
  destroy(): void {
    this.#agent?.agent.destroy();
    this.#agent = undefined;
  }

  #url(): URL {
    const { endpoint } = this.#options;
    return new URL(typeof endpoint === 'string' ? endpoint : endpoint());
  }

  /** One keep-alive agent per endpoint: warm invocations reuse the connection. */
  #agentFor(url: URL): HttpAgent {
    if (this.#agent?.url.origin !== url.origin) {
      this.#agent?.agent.destroy();
      const agent = new (transport(url.protocol).Agent)({ keepAlive: true });
      this.#agent = { url, agent };
    }
    return this.#agent.agent;
  }

  #post(request: HttpRequest): Promise<SignedHttpAnswer> {
    const send = transport(request.protocol).request;
    const timeoutMs = this.#options.timeoutMs ?? 5_000;
    const agent = this.#agentFor(this.#url());
    return new Promise((resolve, reject) => {
      const outgoing = send(
        {
          method: request.method,
          hostname: request.hostname,
          ...(request.port ? { port: request.port } : {}),
          path: request.path,
          headers: request.headers,
          agent,
          timeout: timeoutMs,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
              headers: response.headers,
            }),
          );
          response.on('error', reject);
        },
      );
      outgoing.on('timeout', () =>
        outgoing.destroy(new Error(`no answer from ${request.hostname} in ${timeoutMs} ms`)),
      );
      outgoing.on('error', reject);
      outgoing.end(request.body as string | undefined);
    });
  }
}

/**
 * `node:http` or `node:https`, taken when the first request is sent and through
 * `process.getBuiltinModule`, not a static import: an ES module import of `node:http` makes
 * Node build its ESM view, which reads the `WebSocket` export and so loads undici (~20 ms of a
 * cold start here), and `node:https` loads TLS, which a function only needs once it calls.
 */
function transport(protocol: string): typeof import('node:https') | typeof import('node:http') {
  return process.getBuiltinModule(protocol === 'http:' ? 'node:http' : 'node:https');
}
