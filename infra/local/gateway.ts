import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { decideFromError, decideFromResult } from './authorizer-decision.ts';
import { createFrameSizeGuard } from './frame-limit.ts';
import {
  type ApiIdentity,
  type AuthorizerContext,
  authorizerEvent,
  connectEvent,
  disconnectEvent,
  gatewayId,
  messageEvent,
  requestContext,
  type UpgradeRequest,
} from './gateway-events.ts';
import {
  API_GATEWAY_LIMITS,
  type GatewayHandlers,
  type GatewayLimits,
  type GatewayLog,
  type GatewayOptions,
  type LocalGateway,
} from './gateway-options.ts';
import {
  IntegrationTimeoutError,
  invokeLambda,
  type ProxyResult,
  type RouteTarget,
  readProxyResult,
} from './lambda-invoke.ts';
import { handleManagementRequest, type ManagedConnections } from './management-api.ts';
import { selectRoute, sendInFrames } from './route-selection.ts';
import {
  handshakeProblem,
  hasIdentitySources,
  readUpgradeRequest,
  refuseUpgrade,
} from './upgrade-request.ts';

export * from './gateway-options.ts';
export type { LambdaFunction, RouteTarget } from './lambda-invoke.ts';

/** What is known of a connection between a successful $connect and the 101 response. */
interface Accepted {
  socket: Duplex;
  connectedAt: number;
  request: Pick<UpgradeRequest, 'sourceIp' | 'userAgent' | 'domainName'>;
  authorizer: AuthorizerContext | undefined;
}

type Ended = Pick<Connection, 'id' | 'connectedAt' | 'request' | 'authorizer'> & {
  at: number;
  code: number;
  reason: string;
};

interface Connection {
  id: string;
  socket: WebSocket;
  connectedAt: number;
  lastActiveAt: number;
  request: Pick<UpgradeRequest, 'sourceIp' | 'userAgent' | 'domainName'>;
  authorizer: AuthorizerContext | undefined;
  timers: NodeJS.Timeout[];
  idleTimer: NodeJS.Timeout | undefined;
  /** Set once the connection is ending; later messages are dropped. */
  ending: { at: number; code: number; reason: string } | undefined;
  closed: Promise<void>;
  markClosed: () => void;
}

/** Close codes for the receive errors `ws` raises, as API Gateway would close. */
const ERROR_CLOSE_CODES: Record<string, number> = {
  WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: 1009,
  WS_ERR_INVALID_UTF8: 1007,
};

export async function startGateway(options: GatewayOptions): Promise<LocalGateway> {
  const gateway = new WebSocketGateway(options);
  return gateway.listen(options.port ?? 0, options.host ?? '127.0.0.1');
}

class WebSocketGateway implements ManagedConnections {
  readonly #handlers: GatewayHandlers;
  readonly #limits: GatewayLimits;
  readonly #api: ApiIdentity;
  readonly #identitySource: readonly string[];
  readonly #now: () => number;
  readonly #log: GatewayLog;
  /** Connections @connections can reach: open and not yet ending. */
  readonly #connections = new Map<string, Connection>();
  /** Every connection whose socket has not closed yet (ending ones included). */
  readonly #live = new Set<Connection>();
  readonly #pending = new Set<Promise<unknown>>();
  /** Response headers of a successful $connect, for subprotocol selection. */
  readonly #connectHeaders = new WeakMap<IncomingMessage, Record<string, string>>();
  readonly #server: Server;
  readonly #wss: WebSocketServer;
  #closing = false;

  constructor(options: GatewayOptions) {
    this.#handlers = options.handlers;
    this.#limits = { ...API_GATEWAY_LIMITS, ...options.limits };
    this.#api = { apiId: 'local', stage: 'local', region: 'us-east-1', ...options.api };
    this.#identitySource = options.identitySource ?? [];
    this.#now = options.now ?? Date.now;
    this.#log = options.log ?? (() => {});
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.#limits.messageBytes,
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
    for (const connection of live)
      this.#end(connection, 1001, 'Going away', 'gateway shutting down');
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
    this.#send(c, data);
    return true;
  }

  remove(connectionId: string): boolean {
    const c = this.#connections.get(connectionId);
    if (!c) return false;
    this.#end(c, 1000, 'Connection deleted', 'deleted through @connections');
    return true;
  }

  // --- connecting ---

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // Until the upgrade completes, a client that gives up must not crash the process.
    socket.on('error', () => {});
    const problem = handshakeProblem(req);
    if (problem) return refuseUpgrade(socket, 400, JSON.stringify({ message: problem }));
    if (this.#closing)
      return refuseUpgrade(socket, 503, JSON.stringify({ message: 'Service Unavailable' }));

    const connectionId = gatewayId();
    const connectedAt = this.#now();
    const request = readUpgradeRequest(req);
    const base = { api: this.#api, connectionId, connectedAt, request, routeKey: '$connect' };

    const authorizer = await this.#authorize(request, base);
    if (!authorizer.allow) {
      this.#log('info', 'upgrade refused by the authorizer', {
        connectionId,
        ...authorizer.refusal,
      });
      const { statusCode, message } = authorizer.refusal;
      return refuseUpgrade(socket, statusCode, JSON.stringify({ message }));
    }

    const context = requestContext({
      ...base,
      eventType: 'CONNECT',
      at: this.#now(),
      authorizer: authorizer.context,
    });
    const outcome = await this.#invokeProxy(
      this.#handlers.connect,
      'connect',
      connectEvent(request, context),
    );
    if (outcome.statusCode < 200 || outcome.statusCode > 299) {
      this.#log('info', 'upgrade refused by $connect', {
        connectionId,
        statusCode: outcome.statusCode,
      });
      return refuseUpgrade(socket, outcome.statusCode, outcome.body ?? '', outcome.headers);
    }
    const accepted: Accepted = { socket, connectedAt, request, authorizer: authorizer.context };
    if (socket.destroyed || this.#closing) {
      // $connect has run (and may have registered): its $disconnect must follow, as on AWS.
      refuseUpgrade(socket, 503, JSON.stringify({ message: 'Service Unavailable' }));
      const ending = { at: this.#now(), code: 1006, reason: 'Connection closed during $connect' };
      return this.#disconnect({ ...accepted, id: connectionId, ...ending });
    }
    this.#connectHeaders.set(req, outcome.headers);
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#open(ws, connectionId, accepted));
  }

  async #authorize(
    request: UpgradeRequest,
    base: Omit<Parameters<typeof requestContext>[0], 'eventType' | 'at'>,
  ): Promise<
    | { allow: true; context: AuthorizerContext | undefined }
    | { allow: false; refusal: { statusCode: number; message: string; reason: string } }
  > {
    const authorize = this.#handlers.authorize;
    if (!authorize) return { allow: true, context: undefined };
    if (!hasIdentitySources(request, this.#identitySource)) {
      const reason = `identity source missing: ${this.#identitySource.join(', ')}`;
      return { allow: false, refusal: { statusCode: 401, message: 'Unauthorized', reason } };
    }
    const started = Date.now();
    const event = authorizerEvent(
      this.#api,
      request,
      requestContext({ ...base, eventType: 'CONNECT', at: this.#now() }),
    );
    const decision = await this.#invoke(authorize, 'authorize', event).then(
      (result) => decideFromResult(result, event.methodArn),
      (error: unknown) => decideFromError(error),
    );
    if (!decision.allow) return { allow: false, refusal: decision };
    const context: AuthorizerContext = {
      ...decision.context,
      principalId: decision.principalId,
      integrationLatency: Date.now() - started,
    };
    return { allow: true, context };
  }

  #open(ws: WebSocket, id: string, init: Accepted): void {
    let markClosed = () => {};
    const closed = new Promise<void>((resolve) => {
      markClosed = resolve;
    });
    const c: Connection = {
      id,
      connectedAt: init.connectedAt,
      request: init.request,
      authorizer: init.authorizer,
      socket: ws,
      lastActiveAt: init.connectedAt,
      timers: [],
      idleTimer: undefined,
      ending: undefined,
      closed,
      markClosed,
    };
    this.#connections.set(id, c);
    this.#live.add(c);
    ws.on('message', (data, isBinary) => this.#onMessage(c, data, isBinary));
    ws.on('close', (code, reason) => this.#onClose(c, code, reason.toString()));
    ws.on('error', (error: Error & { code?: string }) => {
      this.#log('warn', 'connection error', { connectionId: id, error: error.message });
      const code = ERROR_CLOSE_CODES[error.code ?? ''] ?? 1002;
      c.ending ??= { at: this.#now(), code, reason: error.message };
      this.#connections.delete(id);
    });
    // Checked before `ws` parses the bytes, so an oversized frame never reaches a handler.
    init.socket.prependListener(
      'data',
      createFrameSizeGuard(this.#limits.frameBytes, (bytes) =>
        this.#end(
          c,
          1009,
          'Message too big',
          `frame of ${bytes} bytes over ${this.#limits.frameBytes}`,
        ),
      ),
    );
    const ageLeft = this.#limits.maxConnectionAgeMs - (this.#now() - init.connectedAt);
    c.timers.push(
      setTimeout(() => this.#end(c, 1001, 'Going away', 'maximum connection age'), ageLeft),
    );
    this.#armIdleTimer(c);
    this.#log('info', 'connected', { connectionId: id, sourceIp: init.request.sourceIp });
  }

  // --- messages ---

  #onMessage(c: Connection, data: RawData, isBinary: boolean): void {
    if (c.ending) return;
    c.lastActiveAt = this.#now();
    this.#armIdleTimer(c);
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
    const body = isBinary ? bytes.toString('base64') : bytes.toString('utf8');
    const routeKey = isBinary
      ? '$default'
      : selectRoute(body, [
          ...Object.keys(this.#handlers.routes ?? {}),
          ...Object.keys(this.#handlers.mocks ?? {}),
        ]);
    const mock = this.#handlers.mocks?.[routeKey];
    if (mock !== undefined) {
      this.#send(c, mock);
      return;
    }
    this.#track(this.#runRoute(c, routeKey, body, isBinary, c.lastActiveAt));
  }

  async #runRoute(c: Connection, routeKey: string, body: string, isBinary: boolean, at: number) {
    const context = requestContext({ ...this.#contextBase(c, routeKey), eventType: 'MESSAGE', at });
    const target = this.#handlers.routes?.[routeKey] ?? this.#handlers.default;
    const reply = (message: string) =>
      this.#send(c, JSON.stringify({ message, connectionId: c.id, requestId: context.requestId }));
    // With no route and no $default, API Gateway answers the client itself.
    if (!target) return reply('Forbidden');
    try {
      const result = await this.#invoke(
        target,
        routeKey.replace(/^\$/, ''),
        messageEvent(context, body, isBinary),
      );
      const proxy = readProxyResult(result);
      if (proxy?.body !== undefined) this.#send(c, proxy.body);
    } catch (error) {
      this.#log('error', 'route integration failed', {
        connectionId: c.id,
        routeKey,
        error: String(error),
      });
      reply(
        error instanceof IntegrationTimeoutError
          ? 'Endpoint request timed out'
          : 'Internal server error',
      );
    }
  }

  #send(c: Connection, text: string): void {
    if (c.socket.readyState === WebSocket.OPEN)
      sendInFrames(c.socket, text, this.#limits.frameBytes);
  }

  // --- ending ---

  #armIdleTimer(c: Connection): void {
    clearTimeout(c.idleTimer);
    c.idleTimer = setTimeout(
      () => this.#end(c, 1001, 'Going away', 'idle timeout'),
      this.#limits.idleTimeoutMs,
    );
  }

  /** Server-side close: gone from @connections at once, $disconnect once the socket closes. */
  #end(c: Connection, code: number, reason: string, why: string): void {
    if (c.ending) return;
    c.ending = { at: this.#now(), code, reason };
    this.#connections.delete(c.id);
    this.#clearTimers(c);
    this.#log('info', 'closing connection', { connectionId: c.id, code, why });
    c.socket.close(code, reason);
    // A client that never answers the close frame is dropped.
    c.timers.push(setTimeout(() => c.socket.terminate(), this.#limits.closeTimeoutMs));
  }

  #onClose(c: Connection, code: number, reason: string): void {
    this.#clearTimers(c);
    this.#connections.delete(c.id);
    this.#live.delete(c);
    const ending = c.ending ?? { at: this.#now(), code, reason: reason || closeReason(code) };
    c.ending = ending;
    this.#track(this.#disconnect({ ...c, ...ending }).finally(c.markClosed));
  }

  async #disconnect(c: Ended): Promise<void> {
    const context = requestContext({
      ...this.#contextBase(c, '$disconnect'),
      eventType: 'DISCONNECT',
      at: c.at,
    });
    context.disconnectStatusCode = c.code;
    context.disconnectReason = c.reason;
    try {
      await this.#invoke(this.#handlers.disconnect, 'disconnect', disconnectEvent(context));
      this.#log('info', 'disconnected', { connectionId: c.id, code: c.code });
    } catch (error) {
      // API Gateway ignores what $disconnect returns or throws; the connection is gone anyway.
      this.#log('error', '$disconnect failed', { connectionId: c.id, error: String(error) });
    }
  }

  #clearTimers(c: Connection): void {
    clearTimeout(c.idleTimer);
    for (const timer of c.timers) clearTimeout(timer);
    c.timers = [];
  }

  // --- helpers ---

  #contextBase(
    c: Pick<Connection, 'id' | 'connectedAt' | 'request' | 'authorizer'>,
    routeKey: string,
  ) {
    return {
      api: this.#api,
      connectionId: c.id,
      connectedAt: c.connectedAt,
      request: c.request,
      authorizer: c.authorizer,
      routeKey,
    };
  }

  #invoke(target: RouteTarget, name: string, event: unknown): Promise<unknown> {
    return invokeLambda(target, event, {
      fallbackName: `${this.#api.apiId}-${name}`,
      region: this.#api.region,
      timeoutMs: this.#limits.integrationTimeoutMs,
    });
  }

  /** Invokes a $connect-style integration; failures become the 502 API Gateway answers. */
  async #invokeProxy(target: RouteTarget, name: string, event: unknown): Promise<ProxyResult> {
    const failed = (why: string): ProxyResult => {
      this.#log('error', `${name} integration failed`, { error: why });
      return {
        statusCode: 502,
        body: JSON.stringify({ message: 'Internal server error' }),
        headers: {},
      };
    };
    try {
      return (
        readProxyResult(await this.#invoke(target, name, event)) ?? failed('malformed proxy result')
      );
    } catch (error) {
      return failed(String(error));
    }
  }

  #track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) =>
      this.#log('error', 'gateway task failed', { error: String(error) }),
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

function closeReason(code: number): string {
  if (code === 1005) return 'Client-side close frame status not set';
  if (code === 1006) return 'Connection closed abnormally';
  return '';
}
