import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { decideFromError, decideFromResult } from './authorizer-decision.ts';
import {
  type AuthorizerContext,
  authorizerEvent,
  connectEvent,
  gatewayId,
  requestContext,
  type UpgradeRequest,
} from './gateway-events.ts';
import type { GatewaySettings } from './gateway-settings.ts';
import {
  invokeDisconnect,
  invokeIntegration,
  invokeProxyIntegration,
} from './integration-calls.ts';
import type { IamIdentity, SigV4Verifier } from './sigv4-verifier.ts';
import {
  handshakeProblem,
  hasIdentitySources,
  readUpgradeRequest,
  refuseUpgrade,
} from './upgrade-request.ts';

/**
 * The way into a connection, as API Gateway runs it: the handshake check, the route's
 * authorization (the REQUEST authorizer, or IAM: the SigV4 check), then the $connect
 * integration, whose answer accepts or refuses the upgrade.
 */

/** What is known of a connection between a successful $connect and the 101 response. */
export interface Accepted {
  socket: Duplex;
  connectedAt: number;
  request: Pick<UpgradeRequest, 'sourceIp' | 'userAgent' | 'domainName'>;
  authorizer: AuthorizerContext | undefined;
}

export interface ConnectingGateway {
  settings: GatewaySettings;
  /** True once the gateway is shutting down: no new connections. */
  isClosing(): boolean;
}

/**
 * Completes the upgrade with the headers $connect answered. Called synchronously after the
 * last check, so the socket and the gateway are still as they were checked.
 */
export type AcceptUpgrade = (
  connectionId: string,
  accepted: Accepted,
  connectHeaders: Record<string, string>,
) => void;

type ContextBase = Omit<Parameters<typeof requestContext>[0], 'eventType' | 'at'>;

type Authorization =
  | { allow: true; context: AuthorizerContext | undefined; iamIdentity?: IamIdentity }
  | {
      allow: false;
      refusal: { statusCode: number; message: string; reason: string };
      headers?: Record<string, string>;
    };

export async function connectUpgrade(
  gateway: ConnectingGateway,
  req: IncomingMessage,
  socket: Duplex,
  accept: AcceptUpgrade,
): Promise<void> {
  const { settings } = gateway;
  // Until the upgrade completes, a client that gives up must not crash the process.
  socket.on('error', () => {});
  const problem = handshakeProblem(req);
  if (problem) return refuseUpgrade(socket, 400, JSON.stringify({ message: problem }));
  if (gateway.isClosing())
    return refuseUpgrade(socket, 503, JSON.stringify({ message: 'Service Unavailable' }));

  const connectionId = gatewayId();
  const connectedAt = settings.now();
  const request = readUpgradeRequest(req);
  const base = { api: settings.api, connectionId, connectedAt, request, routeKey: '$connect' };

  const authorizer = await authorize(settings, request, base);
  if (!authorizer.allow) {
    const { statusCode, message, reason } = authorizer.refusal;
    // Not `message` (the HTTP body's): Powertools drops that key with a warning of its own.
    settings.log('info', 'upgrade refused by the authorizer', { connectionId, statusCode, reason });
    return refuseUpgrade(socket, statusCode, JSON.stringify({ message }), authorizer.headers);
  }

  const context = requestContext({
    ...base,
    eventType: 'CONNECT',
    at: settings.now(),
    authorizer: authorizer.context,
    iamIdentity: authorizer.iamIdentity,
  });
  const outcome = await invokeProxyIntegration(
    settings,
    settings.handlers.connect,
    'connect',
    connectEvent(request, context),
  );
  if (outcome.statusCode < 200 || outcome.statusCode > 299) {
    settings.log('info', 'upgrade refused by $connect', {
      connectionId,
      statusCode: outcome.statusCode,
    });
    return refuseUpgrade(socket, outcome.statusCode, outcome.body ?? '', outcome.headers);
  }
  const accepted: Accepted = { socket, connectedAt, request, authorizer: authorizer.context };
  if (socket.destroyed || gateway.isClosing()) {
    // $connect has run (and may have registered): its $disconnect must follow, as on AWS.
    refuseUpgrade(socket, 503, JSON.stringify({ message: 'Service Unavailable' }));
    const ending = { at: settings.now(), code: 1006, reason: 'Connection closed during $connect' };
    return invokeDisconnect(settings, { ...accepted, id: connectionId, ...ending });
  }
  accept(connectionId, accepted, outcome.headers);
}

async function authorize(
  settings: GatewaySettings,
  request: UpgradeRequest,
  base: ContextBase,
): Promise<Authorization> {
  if (settings.sigv4) return verifySignature(settings.sigv4, request);
  const authorize = settings.handlers.authorize;
  if (!authorize) return { allow: true, context: undefined };
  if (!hasIdentitySources(request, settings.identitySource)) {
    const reason = `identity source missing: ${settings.identitySource.join(', ')}`;
    return { allow: false, refusal: { statusCode: 401, message: 'Unauthorized', reason } };
  }
  const started = Date.now();
  const event = authorizerEvent(
    settings.api,
    request,
    requestContext({ ...base, eventType: 'CONNECT', at: settings.now() }),
  );
  const decision = await invokeIntegration(settings, authorize, 'authorize', event).then(
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

/**
 * IAM authorization: API Gateway checks the SigV4 signature itself, before any function runs,
 * and answers a failure 403 with its message and error type; the caller it verified becomes
 * `requestContext.identity` of $connect. (There is no IAM here to evaluate the caller's
 * `execute-api:Invoke` permission: every configured caller may invoke.)
 */
async function verifySignature(
  verifier: SigV4Verifier,
  request: UpgradeRequest,
): Promise<Authorization> {
  const verdict = await verifier.verify({
    method: request.method,
    path: request.path,
    headers: request.headers,
    query: request.multiValueQuery,
  });
  if (verdict.ok) return { allow: true, context: undefined, iamIdentity: verdict.identity };
  const { statusCode, message, errorType } = verdict;
  return {
    allow: false,
    refusal: { statusCode, message, reason: `SigV4: ${message}` },
    headers: { 'x-amzn-ErrorType': errorType },
  };
}
