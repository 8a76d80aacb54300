import { createAuthorizeHandler } from '../functions/authorize.ts';
import { createConnectHandler } from '../functions/connect.ts';
import { createDisconnectHandler } from '../functions/disconnect.ts';
import { decideFromResult } from '../infra/local/authorizer-decision.ts';
import {
  type AuthorizerContext,
  authorizerEvent,
  connectEvent,
  disconnectEvent,
  lambdaContext,
  requestContext,
  type UpgradeRequest,
} from '../infra/local/gateway-events.ts';
import type { EpochMillis } from '../lib/domain/model.ts';
import { carriedEntryContext } from '../lib/protocol/carried-entry.ts';
import { REPLACED_CLOSE_REASON } from '../lib/protocol/close-reasons.ts';
import type {
  WebSocketConnectEvent,
  WebSocketDisconnectEvent,
} from '../lib/protocol/websocket-events.ts';
import type { AuthorizeDependencies } from '../lib/wiring/authorize.ts';
import type { ConnectDependencies } from '../lib/wiring/connect.ts';
import type { DisconnectDependencies } from '../lib/wiring/disconnect.ts';

const API = { apiId: 'bench', stage: 'prod', region: 'us-east-1' };

/** A VM's connect as its agent makes it: group, namespace, address, optional locality. */
export interface VmConnect {
  connectionId: string;
  namespace: string;
  group: string;
  ip: string;
  locality?: string;
  /** The namespace's join token (Authorization: Bearer). */
  token: string;
}

/**
 * `$connect` and `$disconnect` as API Gateway calls them in token mode: the REQUEST authorizer
 * with the connect's headers and query, its context handed to `$connect` and, later, to the
 * connection's `$disconnect` (with the close code and reason). The real handlers and
 * dependencies; the events are built as the local gateway builds them.
 */
export class GatewayPath {
  readonly #authorize;
  readonly #connect;
  readonly #disconnect;
  /** Each open connection's connect time and authorizer context, for its `$disconnect`. */
  readonly #open = new Map<string, { connectedAt: EpochMillis; authorizer: AuthorizerContext }>();

  /** What the three functions on this path are given (authorizer, `$connect`, `$disconnect`). */
  constructor(deps: AuthorizeDependencies & ConnectDependencies & DisconnectDependencies) {
    this.#authorize = createAuthorizeHandler(deps);
    this.#connect = createConnectHandler(deps);
    this.#disconnect = createDisconnectHandler(deps);
  }

  /** Connects the VM at `at`; the status $connect answered (200: registered). */
  async connect(vm: VmConnect, at: EpochMillis): Promise<number> {
    const query: Record<string, string> = { group: vm.group, namespace: vm.namespace, ip: vm.ip };
    if (vm.locality) query.locality = vm.locality;
    const headers = { Host: 'bench.example', Authorization: `Bearer ${vm.token}` };
    const request: UpgradeRequest = {
      method: 'GET',
      path: `/?${new URLSearchParams(query)}`,
      headers,
      multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
      query,
      multiValueQuery: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]])),
      sourceIp: vm.ip,
      userAgent: 'registrar-agent/bench',
      domainName: 'bench.example',
    };
    const base = {
      api: API,
      routeKey: '$connect',
      eventType: 'CONNECT' as const,
      connectionId: vm.connectionId,
      connectedAt: at,
      at,
      request,
    };
    const authorizing = authorizerEvent(API, request, requestContext(base));
    const decision = await this.#authorize(authorizing, context('authorize')).then(
      (result) => decideFromResult(result, authorizing.methodArn),
      () => undefined,
    );
    if (!decision?.allow) return decision?.statusCode ?? 500;
    const authorizer: AuthorizerContext = {
      ...decision.context,
      principalId: decision.principalId,
      integrationLatency: 1,
    };
    const event = connectEvent(request, requestContext({ ...base, authorizer }));
    const result = await this.#connect(event as WebSocketConnectEvent, context('connect'));
    if (result.statusCode === 200) this.#open.set(vm.connectionId, { connectedAt: at, authorizer });
    return result.statusCode;
  }

  /** The connection closes with `code` (1000 clean, 1006 no close frame) at `at`. */
  async disconnect(
    connectionId: string,
    at: EpochMillis,
    code: number,
    reason = '',
  ): Promise<void> {
    const open = this.#open.get(connectionId);
    if (!open) return;
    this.#open.delete(connectionId);
    const event = disconnectEvent({
      ...requestContext({
        api: API,
        routeKey: '$disconnect',
        eventType: 'DISCONNECT',
        connectionId,
        connectedAt: open.connectedAt,
        at,
        request: { sourceIp: '10.0.0.1', userAgent: undefined, domainName: 'bench.example' },
        authorizer: open.authorizer,
      }),
      disconnectStatusCode: code,
      disconnectReason: reason,
    });
    await this.#disconnect(event as WebSocketDisconnectEvent, context('disconnect'));
  }

  /**
   * Make before break, as the agent rotates: the new connection connects, then the old one
   * closes saying it was replaced.
   */
  async rotate(vm: VmConnect, old: string, at: EpochMillis): Promise<number> {
    const status = await this.connect(vm, at);
    await this.disconnect(old, at + 1, 1000, REPLACED_CLOSE_REASON);
    return status;
  }

  /** A connection the bench seeded through the store directly: its $disconnect needs this. */
  adopt(connectionId: string, connectedAt: EpochMillis, namespace: string, name: string): void {
    this.#open.set(connectionId, {
      connectedAt,
      authorizer: {
        principalId: 'token:bench',
        integrationLatency: 1,
        ...carriedEntryContext({ namespace, name }),
      },
    });
  }
}

function context(name: string) {
  return lambdaContext(`registrar-${name}`, API.region, 30_000);
}
