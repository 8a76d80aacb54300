import type { Duplex } from 'node:stream';
import { type RawData, WebSocket } from 'ws';
import type { Accepted } from './connect-upgrade.ts';
import { createFrameSizeGuard } from './frame-limit.ts';
import { messageEvent, requestContext } from './gateway-events.ts';
import type { GatewaySettings } from './gateway-settings.ts';
import {
  type ConnectionFacts,
  contextBase,
  invokeDisconnect,
  invokeIntegration,
} from './integration-calls.ts';
import { IntegrationTimeoutError, readProxyResult } from './lambda-invoke.ts';
import { selectRoute, sendInFrames } from './route-selection.ts';

/** Close codes for the receive errors `ws` raises, as API Gateway would close. */
const ERROR_CLOSE_CODES: Record<string, number> = {
  WS_ERR_UNSUPPORTED_MESSAGE_LENGTH: 1009,
  WS_ERR_INVALID_UTF8: 1007,
};

/** What a connection needs from the gateway that holds it. */
export interface ConnectionOwner {
  settings: GatewaySettings;
  /** Hands over background work, which the gateway lets finish before it shuts down. */
  track(work: Promise<unknown>): void;
  /** Takes the connection out of @connections: it is ending. */
  unlist(connectionId: string): void;
  /** The connection's socket has closed. */
  release(connection: GatewayConnection): void;
}

/**
 * One open connection, as API Gateway keeps it: each message goes to its route and resets the
 * idle timer; the idle timeout, the maximum age, a frame over the limit or a @connections
 * DELETE close it from the server side; however the socket closes, $disconnect runs once.
 */
export class GatewayConnection implements ConnectionFacts {
  readonly id: string;
  readonly socket: WebSocket;
  readonly connectedAt: number;
  lastActiveAt: number;
  readonly request: Accepted['request'];
  readonly authorizer: Accepted['authorizer'];
  /** Resolves once the socket has closed and $disconnect has run. */
  readonly closed: Promise<void>;
  readonly #owner: ConnectionOwner;
  readonly #settings: GatewaySettings;
  /** The raw socket under `ws`, where frame headers can be read before `ws` parses them. */
  readonly #raw: Duplex;
  #markClosed: () => void = () => {};
  #timers: NodeJS.Timeout[] = [];
  #idleTimer: NodeJS.Timeout | undefined;
  /** Messages of this connection throttled so far (names each throttle answer). */
  #throttled = 0;
  /** Set once the connection is ending; later messages are dropped. */
  #ending: { at: number; code: number; reason: string } | undefined;

  constructor(owner: ConnectionOwner, ws: WebSocket, id: string, init: Accepted) {
    this.#owner = owner;
    this.#settings = owner.settings;
    this.#raw = init.socket;
    this.id = id;
    this.socket = ws;
    this.connectedAt = init.connectedAt;
    this.lastActiveAt = init.connectedAt;
    this.request = init.request;
    this.authorizer = init.authorizer;
    this.closed = new Promise<void>((resolve) => {
      this.#markClosed = resolve;
    });
  }

  /** Listens to the socket and starts the idle and maximum-age timers. */
  start(): void {
    const { limits, log, now } = this.#settings;
    this.socket.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    this.socket.on('close', (code, reason) => this.#onClose(code, reason.toString()));
    this.socket.on('error', (error: Error & { code?: string }) => {
      log('warn', 'connection error', { connectionId: this.id, error: error.message });
      const code = ERROR_CLOSE_CODES[error.code ?? ''] ?? 1002;
      this.#ending ??= { at: now(), code, reason: error.message };
      this.#owner.unlist(this.id);
    });
    // Checked before `ws` parses the bytes, so an oversized frame never reaches a handler.
    this.#raw.prependListener(
      'data',
      createFrameSizeGuard(limits.frameBytes, (bytes) =>
        this.end(1009, 'Message too big', `frame of ${bytes} bytes over ${limits.frameBytes}`),
      ),
    );
    this.#armAgeTimer();
    this.#armIdleTimer();
    log('info', 'connected', { connectionId: this.id, sourceIp: this.request.sourceIp });
  }

  send(text: string): void {
    if (this.socket.readyState === WebSocket.OPEN)
      sendInFrames(this.socket, text, this.#settings.limits.frameBytes);
  }

  /** Server-side close: gone from @connections at once, $disconnect once the socket closes. */
  end(code: number, reason: string, why: string): void {
    if (this.#ending) return;
    this.#ending = { at: this.#settings.now(), code, reason };
    this.#owner.unlist(this.id);
    this.#clearTimers();
    this.#settings.log('info', 'closing connection', { connectionId: this.id, code, why });
    this.socket.close(code, reason);
    // A client that never answers the close frame is dropped.
    this.#timers.push(
      setTimeout(() => this.socket.terminate(), this.#settings.limits.closeTimeoutMs),
    );
  }

  #onMessage(data: RawData, isBinary: boolean): void {
    if (this.#ending) return;
    const { handlers } = this.#settings;
    this.lastActiveAt = this.#settings.now();
    this.#armIdleTimer();
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
    const body = isBinary ? bytes.toString('base64') : bytes.toString('utf8');
    const routeKey = isBinary
      ? '$default'
      : selectRoute(body, [
          ...Object.keys(handlers.routes ?? {}),
          ...Object.keys(handlers.mocks ?? {}),
        ]);
    if (this.#settings.throttle?.take(routeKey) === false) {
      // API Gateway's own answer to a throttled message: no integration runs, no mock answers.
      const requestId = `throttled-${++this.#throttled}`;
      this.send(JSON.stringify({ message: 'Too Many Requests', connectionId: this.id, requestId }));
      this.#settings.log('debug', 'message throttled', { connectionId: this.id, routeKey });
      return;
    }
    const mock = handlers.mocks?.[routeKey];
    if (mock !== undefined) {
      this.send(mock);
      return;
    }
    this.#owner.track(this.#runRoute(routeKey, body, isBinary, this.lastActiveAt));
  }

  async #runRoute(routeKey: string, body: string, isBinary: boolean, at: number) {
    const settings = this.#settings;
    const context = requestContext({
      ...contextBase(settings, this, routeKey),
      eventType: 'MESSAGE',
      at,
    });
    const target = settings.handlers.routes?.[routeKey] ?? settings.handlers.default;
    const reply = (message: string) =>
      this.send(JSON.stringify({ message, connectionId: this.id, requestId: context.requestId }));
    // With no route and no $default, API Gateway answers the client itself.
    if (!target) return reply('Forbidden');
    try {
      const result = await invokeIntegration(
        settings,
        target,
        routeKey.replace(/^\$/, ''),
        messageEvent(context, body, isBinary),
      );
      const proxy = readProxyResult(result);
      if (proxy?.body !== undefined) this.send(proxy.body);
    } catch (error) {
      settings.log('error', 'route integration failed', {
        connectionId: this.id,
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

  /** Node's timers may fire a millisecond early: the limit is re-checked against the clock. */
  #armAgeTimer(): void {
    const { limits, now } = this.#settings;
    const ageLeft = limits.maxConnectionAgeMs - (now() - this.connectedAt);
    this.#timers.push(
      setTimeout(
        () => {
          if (now() - this.connectedAt < limits.maxConnectionAgeMs) this.#armAgeTimer();
          else this.end(1001, 'Going away', 'maximum connection age');
        },
        Math.max(ageLeft, 1),
      ),
    );
  }

  #armIdleTimer(): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(
      () => this.end(1001, 'Going away', 'idle timeout'),
      this.#settings.limits.idleTimeoutMs,
    );
  }

  #onClose(code: number, reason: string): void {
    this.#clearTimers();
    this.#owner.unlist(this.id);
    this.#owner.release(this);
    const ending = this.#ending ?? {
      at: this.#settings.now(),
      code,
      reason: reason || closeReason(code),
    };
    this.#ending = ending;
    const { id, connectedAt, request, authorizer } = this;
    const ended = { id, connectedAt, request, authorizer, ...ending };
    this.#owner.track(invokeDisconnect(this.#settings, ended).finally(this.#markClosed));
  }

  #clearTimers(): void {
    clearTimeout(this.#idleTimer);
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers = [];
  }
}

function closeReason(code: number): string {
  if (code === 1005) return 'Client-side close frame status not set';
  if (code === 1006) return 'Connection closed abnormally';
  return '';
}
