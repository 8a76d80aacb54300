import type { RouteThrottle } from '../route-throttle.ts';
import type { ApiIdentity } from './gateway-events.ts';
import type { RouteTarget } from './lambda-invoke.ts';
import type { IamCallerCredentials } from './sigv4-verifier.ts';

/**
 * A local stand-in for an API Gateway WebSocket API with Lambda proxy integrations: the same
 * events, route selection (`$request.body.action`), limits and management API, so the real
 * handlers run unchanged. It knows nothing about the registrar; the runtime plugs them in.
 */
export interface GatewayHandlers {
  /** REQUEST authorizer on $connect. */
  authorize?: RouteTarget;
  connect: RouteTarget;
  disconnect: RouteTarget;
  /** Custom routes by route key (the message's `action`). */
  routes?: Record<string, RouteTarget>;
  default?: RouteTarget;
  /** Route keys answered by the gateway itself: a MOCK integration with a route response. */
  mocks?: Record<string, string>;
}

export interface GatewayLimits {
  /** API Gateway closes every connection after 2 h. */
  maxConnectionAgeMs: number;
  /** ...and any connection the client sent no message on for 10 min. */
  idleTimeoutMs: number;
  /** Largest frame a client may send: 32 KB. */
  frameBytes: number;
  /** Largest message (frames reassembled): 128 KB. */
  messageBytes: number;
  /** Integration timeout: 29 s. */
  integrationTimeoutMs: number;
  /** How long a server-side close waits for the client's close frame before dropping it. */
  closeTimeoutMs: number;
}

export const API_GATEWAY_LIMITS: Readonly<GatewayLimits> = Object.freeze({
  maxConnectionAgeMs: 2 * 60 * 60 * 1000,
  idleTimeoutMs: 10 * 60 * 1000,
  frameBytes: 32 * 1024,
  messageBytes: 128 * 1024,
  integrationTimeoutMs: 29_000,
  closeTimeoutMs: 2000,
});

export type GatewayLog = (
  level: 'debug' | 'info' | 'warn' | 'error',
  message: string,
  fields?: Record<string, unknown>,
) => void;

export interface GatewayOptions {
  handlers: GatewayHandlers;
  limits?: Partial<GatewayLimits>;
  /** 0 picks a free port. */
  port?: number;
  host?: string;
  api?: Partial<ApiIdentity>;
  /** Required request parts, e.g. `route.request.header.Authorization`: missing means 401. */
  identitySource?: readonly string[];
  /**
   * $connect's authorization type is AWS_IAM: the upgrade must be presigned with SigV4 by one
   * of these callers (API Gateway's IAM), or it is refused 403 before any function runs.
   */
  iamAuthorization?: { callers: readonly IamCallerCredentials[] };
  /**
   * The stage's default route throttle, applied to each message route (infra/route-throttle.ts):
   * over it, a message is answered `Too Many Requests` by the gateway and not delivered.
   * Unset: no throttle.
   */
  routeThrottle?: RouteThrottle;
  /**
   * At most this many invocations of each function at once, the rest waiting their turn within
   * the integration timeout (infra/local/function-concurrency.ts). Unset: no limit.
   */
  functionConcurrency?: number;
  /** The gateway's clock (connectedAt, requestTimeEpoch). */
  now?: () => number;
  log?: GatewayLog;
}

export interface LocalGateway {
  /** ws://host:port */
  url: string;
  /** http://host:port, where `/@connections/{id}` is served. */
  managementUrl: string;
  port: number;
  connectionIds(): string[];
  /** Closes every connection (each gets its $disconnect), then the server. */
  close(): Promise<void>;
}
