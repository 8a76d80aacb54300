import WebSocket from 'ws';
import { NotRegisteredError } from '../lib/domain/errors.ts';
import { AGENT_CLOSE_REASON } from '../lib/protocol/close-reasons.ts';
import type { Clock, Timer } from './clock.ts';

/** A reply of protocol v1: `{"action":...,"ok":true,...}`, `{"action":"pong"}` or an error. */
export interface Reply {
  action?: string;
  ok?: boolean;
  error?: { code?: string; message?: string };
  [key: string]: unknown;
}

/**
 * `drain`: the VM is shutting down; the registrar marks the entry Healthy False (Draining).
 * `sidecar`: the sidecar bootstrap and a fresh mesh identity (agent/sidecar-bootstrap.ts).
 */
export type RequestAction = 'health' | 'describe' | 'ping' | 'drain' | 'sidecar' | 'heartbeat';

/** The upgrade was answered with an HTTP status: the server refused this connect. */
export class RefusedError extends Error {
  readonly status: number;
  readonly code: string | undefined;

  constructor(status: number, code: string | undefined, reason: string) {
    super(reason);
    this.status = status;
    this.code = code;
  }
}

/**
 * The upgrade was answered, but not by a registrar: a plain web page (`200 text/html`), a
 * redirect, or any answer whose body is not JSON. API Gateway and the local runtime answer
 * every refusal with a JSON body (`{"message":"Unauthorized"}`, the registrar's error), so
 * such an answer means `--url` points at something else, and retrying soon cannot help.
 */
export class NotRegistrarError extends Error {
  readonly status: number;
  /** The media type as the server sent it (`text/html`), if it sent one. */
  readonly contentType: string | undefined;

  constructor(status: number, contentType: string | undefined) {
    super(
      `this URL answered HTTP ${status} with ${contentType ?? 'no content type'}; it is not a registrar WebSocket endpoint`,
    );
    this.status = status;
    this.contentType = contentType;
  }
}

/** A request that got no reply, an error reply, or lost its connection. */
export class RequestError extends Error {
  readonly kind: 'timeout' | 'closed' | 'error';
  /** The registrar's error code of an error reply (`NotRegistered`, `InvalidRequest`, ...). */
  readonly code: string | undefined;

  constructor(kind: 'timeout' | 'closed' | 'error', message: string, code?: string) {
    super(message);
    this.kind = kind;
    this.code = code;
  }
}

/** The registrar answered that this connection holds no entry: only a new connection helps. */
export function isNotRegistered(error: unknown): boolean {
  return error instanceof RequestError && error.code === NotRegisteredError.CODE;
}

/** One open WebSocket to the registrar, speaking protocol v1. */
export interface AgentLink {
  /** Sends `{"action":...}` and resolves with its reply; one outstanding request per action. */
  request(action: RequestAction, body?: Record<string, unknown>): Promise<Reply>;
  /**
   * Closes with 1000 so the server runs $disconnect; resolves when closed (or after a grace).
   * `reason` tells the registrar why (REPLACED_CLOSE_REASON after a rotation).
   */
  close(reason?: string): Promise<void>;
  onClose(listener: (code: number, reason: string) => void): void;
  /**
   * Messages the registrar sends unasked (`{"action":"maintenance",...}`: an operator's
   * cordon). Optional: a link that never gets any need not implement it.
   */
  onNotice?(listener: (notice: Reply) => void): void;
  /**
   * When (clock time) the last frame of any kind arrived: a reply, a notice, or an answer of
   * API Gateway itself such as a throttled message's (`{"message":"Too Many Requests",...}`).
   * Optional: a link without it counts only replies.
   */
  readonly lastReceivedAt?: number;
  /** The last answer API Gateway gave itself (no `action`, no `ok`): its text, and when. */
  readonly lastGatewayMessage?: { text: string; at: number };
  readonly closed: boolean;
}

export interface LinkOptions {
  clock: Clock;
  connectTimeoutMs: number;
  /** How long a request waits for its reply. */
  replyTimeoutMs: number;
  /** Test hook: the WebSocket implementation's options. */
  wsOptions?: WebSocket.ClientOptions;
  /**
   * Told every protocol message sent and received, as its JSON text (`--debug`). Messages
   * never carry a credential: the join token and the SigV4 signature travel in the upgrade.
   */
  trace?: (direction: 'sent' | 'received', text: string) => void;
}

interface Pending {
  resolve: (reply: Reply) => void;
  reject: (error: RequestError) => void;
  timer: Timer;
}

// Replies carry no request id: they are matched to the request by action.
const REPLY_ACTION: Record<string, RequestAction> = {
  health: 'health',
  describe: 'describe',
  drain: 'drain',
  sidecar: 'sidecar',
  heartbeat: 'heartbeat',
  pong: 'ping',
};
// What the registrar sends unasked (lib/protocol/maintenance-notice.ts, heartbeat-notice.ts);
// any other unasked message matches no request and is dropped, which is how an older agent
// ignores these.
const NOTICE_ACTIONS = new Set(['maintenance', 'heartbeat-change']);
// A server that does not answer a close frame is not waited for longer than this.
const CLOSE_GRACE_MS = 2_000;

/**
 * Opens one connection; rejects with RefusedError on a registrar's HTTP refusal,
 * NotRegistrarError on an answer no registrar gives, Error otherwise.
 */
export function openLink(
  url: string,
  headers: Record<string, string>,
  options: LinkOptions,
): Promise<AgentLink> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, {
      headers,
      handshakeTimeout: options.connectTimeoutMs,
      // Replies are small; a 1 MiB cap keeps a misbehaving server from filling memory.
      maxPayload: 1024 * 1024,
      ...options.wsOptions,
    });
    socket.once('unexpected-response', (request, response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= 16_384) chunks.push(chunk);
      });
      const done = () => {
        request.destroy();
        const status = response.statusCode ?? 0;
        const body = Buffer.concat(chunks).toString('utf8');
        const contentType = response.headers['content-type']?.split(';')[0]?.trim() || undefined;
        if (!isRegistrarAnswer(status, contentType, body)) {
          reject(new NotRegistrarError(status, contentType));
          return;
        }
        const { code, message } = parseRefusal(body);
        reject(
          new RefusedError(status, code, message ?? response.statusMessage ?? `HTTP ${status}`),
        );
      };
      response.once('end', done);
      response.once('error', done);
    });
    // `on`, not `once`: a second error (the refused request being torn down) must not throw.
    socket.on('error', (error) => reject(error));
    socket.once('open', () => {
      socket.removeAllListeners('error');
      resolve(createLink(socket, options));
    });
  });
}

function createLink(socket: WebSocket, options: LinkOptions): AgentLink {
  const pending = new Map<RequestAction, Pending>();
  const listeners: ((code: number, reason: string) => void)[] = [];
  const noticeListeners: ((notice: Reply) => void)[] = [];
  let closed = false;
  let lastReceivedAt: number | undefined;
  let lastGatewayMessage: { text: string; at: number } | undefined;

  const settle = (action: RequestAction, outcome: Reply | RequestError) => {
    const entry = pending.get(action);
    if (!entry) return;
    pending.delete(action);
    entry.timer.cancel();
    if (outcome instanceof RequestError) entry.reject(outcome);
    else entry.resolve(outcome);
  };

  socket.on('message', (data) => {
    lastReceivedAt = options.clock.now();
    options.trace?.('received', String(data));
    let reply: Reply;
    try {
      reply = JSON.parse(String(data)) as Reply;
    } catch {
      return; // Not protocol v1; nothing to match it to.
    }
    if (reply.action === undefined && reply.ok === undefined && typeof reply.message === 'string') {
      // API Gateway's own answer (a throttled message, an integration failure): it says which
      // request neither by action nor by id, so it settles none; the ping check reads it.
      lastGatewayMessage = { text: reply.message, at: lastReceivedAt };
      return;
    }
    if (reply.action !== undefined && NOTICE_ACTIONS.has(reply.action)) {
      for (const listener of noticeListeners) listener(reply);
      return;
    }
    const action = reply.action === undefined ? undefined : REPLY_ACTION[reply.action];
    if (reply.ok === false) {
      // An error reply names no action (protocol v1): it answers the request whose action its
      // message quotes (`unknown action 'drain'` from a registrar that predates drain, while a
      // ping may be outstanding too), else the oldest outstanding request.
      const quoted = [...pending.keys()].find((name) =>
        reply.error?.message?.includes(`'${name}'`),
      );
      const target = action ?? quoted ?? pending.keys().next().value;
      const text = `${reply.error?.code ?? 'Error'}: ${reply.error?.message ?? 'request refused'}`;
      if (target) settle(target, new RequestError('error', text, reply.error?.code));
      return;
    }
    // A late reply to a request that already timed out finds nothing pending: dropped.
    if (action) settle(action, reply);
  });
  // Without a listener ws would throw; the close that follows an error is what matters.
  socket.on('error', () => {});
  socket.on('close', (code, reason) => {
    closed = true;
    for (const action of [...pending.keys()]) {
      settle(
        action,
        new RequestError('closed', `connection closed (${code}) before the ${action} reply`),
      );
    }
    for (const listener of listeners) listener(code, reason.toString('utf8'));
  });

  return {
    get closed() {
      return closed;
    },
    get lastReceivedAt() {
      return lastReceivedAt;
    },
    get lastGatewayMessage() {
      return lastGatewayMessage;
    },
    request(action, body = {}) {
      if (closed || socket.readyState !== WebSocket.OPEN) {
        return Promise.reject(
          new RequestError('closed', `cannot send ${action}: connection is closed`),
        );
      }
      // At most one outstanding request per action: a newer one supersedes the older.
      settle(action, new RequestError('error', `${action} superseded by a newer request`));
      return new Promise<Reply>((resolve, reject) => {
        const timer = options.clock.setTimer(options.replyTimeoutMs, () =>
          settle(
            action,
            new RequestError('timeout', `no ${action} reply within ${options.replyTimeoutMs} ms`),
          ),
        );
        pending.set(action, { resolve, reject, timer });
        const text = JSON.stringify({ action, ...body });
        options.trace?.('sent', text);
        socket.send(text);
      });
    },
    close(reason = AGENT_CLOSE_REASON) {
      if (closed) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const grace = options.clock.setTimer(CLOSE_GRACE_MS, () => {
          socket.terminate();
          resolve();
        });
        socket.once('close', () => {
          grace.cancel();
          resolve();
        });
        socket.close(1000, reason);
      });
    },
    onClose(listener) {
      listeners.push(listener);
    },
    onNotice(listener) {
      noticeListeners.push(listener);
    },
  };
}

/**
 * A registrar refuses an upgrade with a 4xx or 5xx and a JSON body (possibly empty: a
 * `$connect` Lambda may return a status alone). A 2xx or 3xx is an ordinary web server
 * answering a page or a redirect; a body or content type that is not JSON (an HTML error page
 * of a proxy or a web server) is not the registrar speaking either.
 */
function isRegistrarAnswer(status: number, contentType: string | undefined, body: string): boolean {
  if (status < 400) return false;
  if (contentType !== undefined && !/^application\/([\w.-]+\+)?json$/i.test(contentType))
    return false;
  if (body.trim() === '') return true;
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}

function parseRefusal(body: string): { code?: string; message?: string } {
  try {
    const parsed = JSON.parse(body) as {
      error?: { code?: unknown; message?: unknown };
      message?: unknown;
    };
    const code = typeof parsed.error?.code === 'string' ? parsed.error.code : undefined;
    const message =
      typeof parsed.error?.message === 'string'
        ? parsed.error.message
        : typeof parsed.message === 'string'
          ? parsed.message
          : undefined;
    return { ...(code ? { code } : {}), ...(message ? { message } : {}) };
  } catch {
    const text = body.trim().slice(0, 200);
    return text ? { message: text } : {};
  }
}
