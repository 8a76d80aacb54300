import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The API Gateway management API (`@connections`) on the gateway's own port:
 *   POST   /@connections/{id}   sends the request body to the client
 *   GET    /@connections/{id}   { ConnectedAt, Identity: { SourceIp, UserAgent }, LastActiveAt }
 *   DELETE /@connections/{id}   closes the connection ($disconnect follows)
 * An unknown or already closed id is 410 GoneException, as in AWS. The stage prefix AWS uses
 * (`/<stage>/@connections/{id}`) is accepted too, so an ApiGatewayManagementApiClient pointed
 * at `http://host:port/<stage>` works. Locally no SigV4 signature is required.
 */
export interface ManagedConnections {
  describe(
    connectionId: string,
  ):
    | { connectedAt: number; lastActiveAt: number; sourceIp: string; userAgent: string | undefined }
    | undefined;
  /** False when the connection is gone. */
  post(connectionId: string, data: string): boolean;
  /** False when the connection is gone. */
  remove(connectionId: string): boolean;
}

/** API Gateway's limit for one message, @connections included. */
export const MANAGEMENT_PAYLOAD_LIMIT_BYTES = 128 * 1024;

const PATH = /^(?:\/[^/]+)?\/@connections\/([^/?]+)\/?(?:\?.*)?$/;

export function handleManagementRequest(
  connections: ManagedConnections,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const match = PATH.exec(req.url ?? '');
  if (!match?.[1]) {
    // A plain HTTP request to a WebSocket endpoint: nothing to serve but the upgrade.
    reply(res, 426, { message: 'Upgrade Required: connect with a WebSocket client' });
    return;
  }
  const connectionId = decodedId(match[1]);
  if (connectionId === undefined) {
    // `%ZZ` is no percent-encoding: a client's mistake, never a reason to stop the gateway.
    error(res, 400, 'BadRequestException', 'invalid connection id: malformed percent-encoding');
    return;
  }
  switch (req.method) {
    case 'GET': {
      const info = connections.describe(connectionId);
      if (!info) {
        gone(res);
        return;
      }
      const identity: Record<string, string> = { SourceIp: info.sourceIp };
      if (info.userAgent !== undefined) identity.UserAgent = info.userAgent;
      reply(res, 200, {
        ConnectedAt: new Date(info.connectedAt).toISOString(),
        Identity: identity,
        LastActiveAt: new Date(info.lastActiveAt).toISOString(),
      });
      return;
    }
    case 'DELETE':
      if (connections.remove(connectionId)) res.writeHead(204).end();
      else gone(res);
      return;
    case 'POST':
      readBody(req, MANAGEMENT_PAYLOAD_LIMIT_BYTES).then(
        (body) => {
          if (body === undefined) error(res, 413, 'PayloadTooLargeException', 'Message too long');
          else if (connections.post(connectionId, body)) res.writeHead(200).end();
          else gone(res);
        },
        () => res.destroy(),
      );
      return;
    default:
      error(res, 405, 'MethodNotAllowedException', `method ${req.method} is not supported`);
  }
}

function decodedId(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

function gone(res: ServerResponse): void {
  error(res, 410, 'GoneException', null);
}

/** The error type header is what the AWS SDK reads to raise GoneException and friends. */
function error(res: ServerResponse, status: number, type: string, message: string | null): void {
  reply(res, status, { message }, { 'x-amzn-ErrorType': type });
}

function reply(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res
    .writeHead(status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      ...headers,
    })
    .end(text);
}

/** The body as text, or undefined when it is over the limit. */
function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) over = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(over ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
