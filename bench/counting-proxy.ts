import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP proxy in front of a DynamoDB-compatible endpoint that counts requests by operation
 * (the `X-Amz-Target` header, e.g. `DynamoDB_20120810.GetItem` -> `GetItem`). Counting on the
 * wire measures what the deployed functions would send, through the real gateway, authorizer
 * and handlers, with nothing in the code under test instrumented.
 */
export interface CountingProxy {
  endpoint: string;
  counts(): Record<string, number>;
  reset(): void;
  close(): Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  let counts: Record<string, number> = {};
  const server: Server = createServer((req, res) => {
    const operation =
      String(req.headers['x-amz-target'] ?? 'unknown')
        .split('.')
        .pop() ?? '';
    counts[operation] = (counts[operation] ?? 0) + 1;
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts: () => ({ ...counts }),
    reset: () => {
      counts = {};
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
