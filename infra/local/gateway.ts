import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { type Accepted, connectUpgrade } from './connect-upgrade.ts';
import { type ConnectionOwner, GatewayConnection } from './gateway-connection.ts';
import type { GatewayOptions, LocalGateway } from './gateway-options.ts';
import { type GatewaySettings, resolveGatewaySettings } from './gateway-settings.ts';
import { handleManagementRequest, type ManagedConnections } from './management-api.ts';
import { refuseUpgrade } from './upgrade-request.ts';

export * from './gateway-options.ts';
export type { LambdaFunction, RouteTarget } from './lambda-invoke.ts';

/**
 * The local gateway's server and lifecycle: one HTTP server takes the WebSocket upgrades
 * (connect-upgrade.ts) and serves @connections (management-api.ts); it holds the open
 * connections (gateway-connection.ts) and, on close, ends them and waits for every
 * $disconnect before it stops.
 */
export async function startGateway(options: GatewayOptions): Promise<LocalGateway> {
  const gateway = new WebSocketGateway(options);
  return gateway.listen(options.port ?? 0, options.host ?? '127.0.0.1');
}

class WebSocketGateway implements ManagedConnections {
  readonly #settings: GatewaySettings;
  /** Connections @connections can reach: open and not yet ending. */
  readonly #connections = new Map<string, GatewayConnection>();
  /** Every connection whose socket has not closed yet (ending ones included). */
  readonly #live = new Set<GatewayConnection>();
  readonly #pending = new Set<Promise<unknown>>();
  /** Response headers of a successful $connect, for subprotocol selection. */
  readonly #connectHeaders = new WeakMap<IncomingMessage, Record<string, string>>();
  readonly #owner: ConnectionOwner;
  readonly #server: Server;
  readonly #wss: WebSocketServer;
  #closing = false;

  constructor(options: GatewayOptions) {
    this.#settings = resolveGatewaySettings(options);
    this.#owner = {
      settings: this.#settings,
      track: (work) => this.#track(work),
      unlist: (connectionId) => this.#connections.delete(connectionId),
      release: (connection) => this.#live.delete(connection),
    };
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.#settings.limits.messageBytes,
      // API Gateway does not negotiate compression.
      perMessageDeflate: false,
      // Like API Gateway, pick a subprotocol only when $connect answered with one.
      handleProtocols: (offered, req) => {
        const chosen = headerValue(this.#connectHeaders.get(req), 'sec-websocket-protocol');
        return chosen !== undefined && offered.has(chosen) ? chosen : false;
      },
    });
    this.#server = createServer((req, res) => handleManagementRequest(this, req, res));
    this.#server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.#track(this.#upgrade(req, socket, head));
    });
    this.#server.on('clientError', (_error, socket) => socket.destroy());
  }

  listen(port: number, host: string): Promise<LocalGateway> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        const bound = (this.#server.address() as AddressInfo).port;
        const hostPart = host.includes(':') ? `[${host}]` : host;
        resolve({
          url: `ws://${hostPart}:${bound}`,
          managementUrl: `http://${hostPart}:${bound}`,
          port: bound,
          connectionIds: () => [...this.#connections.keys()],
          close: () => this.close(),
        });
      });
    });
  }

  async close(): Promise<void> {
    this.#closing = true;
    const live = [...this.#live];
    for (const connection of live) connection.end(1001, 'Going away', 'gateway shutting down');
    await Promise.all(live.map((c) => c.closed));
    // In-flight upgrades, messages and every $disconnect finish before the server goes.
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
    this.#wss.close();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  // --- the management API (ManagedConnections) ---

  describe(connectionId: string) {
    const c = this.#connections.get(connectionId);
    if (!c) return undefined;
    return { connectedAt: c.connectedAt, lastActiveAt: c.lastActiveAt, ...c.request };
  }

  post(connectionId: string, data: string): boolean {
    const c = this.#connections.get(connectionId);
    if (!c || c.socket.readyState !== WebSocket.OPEN) return false;
    c.send(data);
    return true;
  }

  remove(connectionId: string): boolean {
    const c = this.#connections.get(connectionId);
    if (!c) return false;
    c.end(1000, 'Connection deleted', 'deleted through @connections');
    return true;
  }

  // --- connecting ---

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const gateway = { settings: this.#settings, isClosing: () => this.#closing };
    try {
      await connectUpgrade(gateway, req, socket, (connectionId, accepted, connectHeaders) => {
        this.#connectHeaders.set(req, connectHeaders);
        this.#wss.handleUpgrade(req, socket, head, (ws) => this.#open(ws, connectionId, accepted));
      });
    } catch (error) {
      // A request the gateway could not even read (a malformed URL) is answered, never left
      // hanging; a fault of the gateway itself is a 500, as API Gateway would answer.
      if ((error as NodeJS.ErrnoException).code === 'ERR_INVALID_URL') {
        refuseUpgrade(socket, 400, JSON.stringify({ message: 'Bad Request: malformed URL' }));
        return;
      }
      refuseUpgrade(socket, 500, JSON.stringify({ message: 'Internal server error' }));
      throw error;
    }
  }

  #open(ws: WebSocket, id: string, accepted: Accepted): void {
    const connection = new GatewayConnection(this.#owner, ws, id, accepted);
    this.#connections.set(id, connection);
    this.#live.add(connection);
    connection.start();
  }

  #track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) =>
      this.#settings.log('error', 'gateway task failed', { error: String(error) }),
    );
    this.#pending.add(tracked);
    void tracked.finally(() => this.#pending.delete(tracked));
  }
}

function headerValue(
  headers: Record<string, string> | undefined,
  name: string,
): string | undefined {
  return Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1];
}
