import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { UpgradeRequest } from './gateway-events.ts';

/**
 * Reads what API Gateway reports about an upgrade request. Header names keep the client's
 * spelling (API Gateway does not lower-case them), so handlers must look them up without
 * regard to case, as they must on AWS. For repeated headers and query parameters the
 * single-value maps hold the last value and the multi-value maps all of them.
 */
export function readUpgradeRequest(req: IncomingMessage): UpgradeRequest {
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    const value = req.rawHeaders[i + 1] as string;
    const existing = Object.keys(multiValueHeaders).find(
      (k) => k.toLowerCase() === name.toLowerCase(),
    );
    const key = existing ?? name;
    multiValueHeaders[key] = [...(multiValueHeaders[key] ?? []), value];
  }
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  // API Gateway adds the forwarding headers itself; the integration always sees them.
  const forwarded: Record<string, string> = {
    'X-Forwarded-For': sourceIp,
    'X-Forwarded-Port': String(req.socket.localPort ?? ''),
    'X-Forwarded-Proto': 'http',
  };
  for (const [name, value] of Object.entries(forwarded)) {
    if (!Object.keys(multiValueHeaders).some((k) => k.toLowerCase() === name.toLowerCase())) {
      multiValueHeaders[name] = [value];
    }
  }
  const headers = lastValues(multiValueHeaders);

  const multiValueQuery: Record<string, string[]> = {};
  const url = new URL(req.url ?? '/', 'http://localhost');
  for (const [name, value] of url.searchParams) {
    multiValueQuery[name] = [...(multiValueQuery[name] ?? []), value];
  }

  return {
    method: req.method ?? 'GET',
    path: (req.url ?? '/').split('?')[0] || '/',
    headers,
    multiValueHeaders,
    query: lastValues(multiValueQuery),
    multiValueQuery,
    sourceIp,
    userAgent: req.headers['user-agent'],
    domainName: req.headers.host ?? 'localhost',
  };
}

function lastValues(multi: Record<string, string[]>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(multi).map(([name, values]) => [name, values[values.length - 1] ?? '']),
  );
}

/** Why the request is not a WebSocket handshake `ws` would accept; checked before any handler runs. */
export function handshakeProblem(req: IncomingMessage): string | undefined {
  if (req.method !== 'GET') return `method ${req.method} is not GET`;
  if (req.headers.upgrade?.toLowerCase() !== 'websocket') return 'Upgrade header is not websocket';
  const key = req.headers['sec-websocket-key'];
  if (!key || !/^[+/0-9A-Za-z]{22}==$/.test(key)) return 'Sec-WebSocket-Key is missing or invalid';
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return 'Sec-WebSocket-Version is not 13';
  return undefined;
}

/**
 * Whether every identity source is present. API Gateway answers 401 without invoking the
 * authorizer when one is missing (the CDK WebSocketLambdaAuthorizer defaults to
 * `route.request.header.Authorization`).
 */
export function hasIdentitySources(request: UpgradeRequest, sources: readonly string[]): boolean {
  return sources.every((source) => {
    const header = /^route\.request\.header\.(.+)$/.exec(source)?.[1];
    if (header !== undefined) {
      return Object.entries(request.headers).some(
        ([name, value]) => name.toLowerCase() === header.toLowerCase() && value !== '',
      );
    }
    const query = /^route\.request\.querystring\.(.+)$/.exec(source)?.[1];
    if (query !== undefined) return (request.query[query] ?? '') !== '';
    return true;
  });
}

/** Answers the upgrade with a plain HTTP response and closes the socket. */
export function refuseUpgrade(
  socket: Duplex,
  statusCode: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const all: Record<string, string> = {
    'Content-Type': 'application/json',
    ...headers,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
  };
  const lines = Object.entries(all).map(([name, value]) => `${name}: ${value}`);
  const status = `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode] ?? 'Unknown'}`;
  socket.end(`${[status, ...lines].join('\r\n')}\r\n\r\n${body}`);
}
