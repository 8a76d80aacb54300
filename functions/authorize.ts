import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { verifyJoinToken } from '../lib/auth/join-token.ts';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { countRefusal, logger, metrics } from '../lib/observability.ts';
import { bearerToken } from '../lib/protocol/bearer-token.ts';
import { carriedEntryContext, requestedEntry } from '../lib/protocol/carried-entry.ts';
import { parseConnectRequest } from '../lib/protocol/connect-request.ts';
import { errorsLoggedAndRethrown } from '../lib/protocol/error-response.ts';
import { authorizerContext, tokenPrincipal } from '../lib/protocol/identity.ts';
import type {
  AuthorizerResult,
  WebSocketAuthorizerEvent,
} from '../lib/protocol/websocket-events.ts';
import { type AuthorizeDependencies, authorizeDependencies } from '../lib/wiring/authorize.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';

/**
 * REQUEST authorizer of `$connect` (token mode). API Gateway turns the answer into the
 * status of the failed upgrade:
 * - no, malformed, unknown, revoked or expired token: `Error('Unauthorized')` -> 401;
 * - a valid token for another namespace than `?namespace=`: a Deny policy -> 403;
 * - otherwise Allow, with the verified identity as context for `$connect`, and the entry the
 *   connect registers: API Gateway repeats the context on every later event of the
 *   connection, so `$disconnect` and messages find the entry without a read.
 * Any other failure (the table unreachable) propagates and API Gateway answers 500.
 */
export function createAuthorizeHandler(
  deps: AuthorizeDependencies,
): FunctionHandler<WebSocketAuthorizerEvent, AuthorizerResult> {
  async function onAuthorize(event: WebSocketAuthorizerEvent): Promise<AuthorizerResult> {
    logger.appendKeys({ connectionId: event.requestContext.connectionId });
    const presented = bearerToken(event.headers, event.multiValueHeaders);
    const token = await verifyJoinToken(deps.tokens, presented, deps.now());
    logger.appendKeys({ tokenId: token.id });
    const requested = requestedNamespace(event);
    // Without `?namespace=`, $connect refuses with a 400 that names the missing parameter.
    if (requested !== undefined && requested !== token.namespace) {
      logger.warn('join token used for another namespace', {
        tokenNamespace: token.namespace,
        requestedNamespace: requested.slice(0, 63),
      });
      countRefusal('Forbidden');
      return policy(tokenPrincipal(token), 'Deny', event.methodArn);
    }
    logger.info('join token accepted', { namespace: token.namespace });
    return {
      ...policy(tokenPrincipal(token), 'Allow', event.methodArn),
      context: { ...authorizerContext(token), ...entryContext(event) },
    };
  }

  // logEvent: false whatever POWERTOOLS_LOGGER_LOG_EVENT says: the event holds the token.
  return middy<WebSocketAuthorizerEvent, AuthorizerResult>()
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
    .use(logMetrics(metrics))
    .use(
      errorsLoggedAndRethrown(logger, (_error, outcome) =>
        // The exact message API Gateway maps to 401; anything else thrown becomes a 500.
        outcome.statusCode === 401 ? new Error('Unauthorized') : undefined,
      ),
    )
    .handler(onAuthorize);
}

/**
 * The entry of a valid connect request. An invalid one is allowed through without it: the
 * authorizer can only answer 401, 403 or 500, and `$connect` refuses it with a 400 that names
 * the field.
 */
function entryContext(event: WebSocketAuthorizerEvent): Record<string, string> {
  try {
    return carriedEntryContext(requestedEntry(parseConnectRequest(event)));
  } catch {
    return {};
  }
}

function requestedNamespace(event: WebSocketAuthorizerEvent): string | undefined {
  return (
    event.multiValueQueryStringParameters?.namespace?.[0] ??
    event.queryStringParameters?.namespace ??
    undefined
  );
}

function policy(principalId: string, effect: 'Allow' | 'Deny', resource: string): AuthorizerResult {
  return {
    principalId,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: resource }],
    },
  };
}

export const handler = lazyHandler(createAuthorizeHandler, authorizeDependencies);
