import {
  type AuthorizerContext,
  disconnectEvent,
  requestContext,
  type UpgradeRequest,
} from './gateway-events.ts';
import type { GatewaySettings } from './gateway-settings.ts';
import {
  invokeLambda,
  type ProxyResult,
  type RouteTarget,
  readProxyResult,
} from './lambda-invoke.ts';

/**
 * How the gateway calls its Lambda integrations: under the API's name and region, within the
 * integration timeout, and with what API Gateway does when one fails.
 */

/** What API Gateway repeats on every event of a connection. */
export interface ConnectionFacts {
  id: string;
  connectedAt: number;
  request: Pick<UpgradeRequest, 'sourceIp' | 'userAgent' | 'domainName'>;
  authorizer: AuthorizerContext | undefined;
}

/** A connection that has ended, with the close its $disconnect reports. */
export type EndedConnection = ConnectionFacts & {
  at: number;
  code: number;
  reason: string;
};

export function contextBase(settings: GatewaySettings, c: ConnectionFacts, routeKey: string) {
  return {
    api: settings.api,
    connectionId: c.id,
    connectedAt: c.connectedAt,
    request: c.request,
    authorizer: c.authorizer,
    routeKey,
  };
}

export function invokeIntegration(
  settings: GatewaySettings,
  target: RouteTarget,
  name: string,
  event: unknown,
): Promise<unknown> {
  return invokeLambda(target, event, {
    fallbackName: `${settings.api.apiId}-${name}`,
    region: settings.api.region,
    timeoutMs: settings.limits.integrationTimeoutMs,
    concurrency: settings.concurrency,
  });
}

/** Invokes a $connect-style integration; failures become the 502 API Gateway answers. */
export async function invokeProxyIntegration(
  settings: GatewaySettings,
  target: RouteTarget,
  name: string,
  event: unknown,
): Promise<ProxyResult> {
  const failed = (why: string): ProxyResult => {
    settings.log('error', `${name} integration failed`, { error: why });
    return {
      statusCode: 502,
      body: JSON.stringify({ message: 'Internal server error' }),
      headers: {},
    };
  };
  try {
    return (
      readProxyResult(await invokeIntegration(settings, target, name, event)) ??
      failed('malformed proxy result')
    );
  } catch (error) {
    return failed(String(error));
  }
}

/** Runs $disconnect for a connection that has ended. */
export async function invokeDisconnect(
  settings: GatewaySettings,
  c: EndedConnection,
): Promise<void> {
  const context = requestContext({
    ...contextBase(settings, c, '$disconnect'),
    eventType: 'DISCONNECT',
    at: c.at,
  });
  context.disconnectStatusCode = c.code;
  context.disconnectReason = c.reason;
  try {
    await invokeIntegration(
      settings,
      settings.handlers.disconnect,
      'disconnect',
      disconnectEvent(context),
    );
    settings.log('info', 'disconnected', { connectionId: c.id, code: c.code });
  } catch (error) {
    // API Gateway ignores what $disconnect returns or throws; the connection is gone anyway.
    settings.log('error', '$disconnect failed', { connectionId: c.id, error: String(error) });
  }
}
