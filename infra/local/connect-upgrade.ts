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
import {
  handshakeProblem,
  hasIdentitySources,
  readUpgradeRequest,
  refuseUpgrade,
} from './upgrade-request.ts';

/**
 * The way into a connection, as API Gateway runs it: the handshake check, the REQUEST
 * authorizer, then the $connect integration, whose answer accepts or refuses the upgrade.
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
  | { allow: true; context: AuthorizerContext | undefined }
  | { allow: false; refusal: { statusCode: number; message: string; reason: string } };

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
    settings.log('info', 'upgrade refused by the authorizer', {
      connectionId,
      ...authorizer.refusal,
    });
    const { statusCode, message } = authorizer.refusal;
    return refuseUpgrade(socket, statusCode, JSON.stringify({ message }));
  }

  const context = requestContext({
    ...base,
    eventType: 'CONNECT',
    at: settings.now(),
    authorizer: authorizer.context,
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
