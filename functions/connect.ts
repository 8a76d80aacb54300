import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { type Dependencies, type FunctionHandler, lazyHandler } from '../lib/dependencies.ts';
import { formatRef } from '../lib/domain/model.ts';
import { countMetric, logger, METRIC, metrics } from '../lib/observability.ts';
import { parseConnectRequest } from '../lib/protocol/connect-request.ts';
import { errorsToResponses } from '../lib/protocol/error-response.ts';
import { verifiedIdentity } from '../lib/protocol/identity.ts';
import type { WebSocketConnectEvent, WebSocketResult } from '../lib/protocol/websocket-events.ts';
import { createGroupCache } from '../lib/registration/group-cache.ts';
import { registerWorkload } from '../lib/registration/register-workload.ts';

/** `$connect`: registers the VM. A refusal rejects the WebSocket upgrade with its status. */
export function createConnectHandler(
  deps: Dependencies,
): FunctionHandler<WebSocketConnectEvent, WebSocketResult> {
  // Lives as long as the Lambda container: a reconnect storm reads each group once per TTL.
  const groups = createGroupCache(deps.store, deps.config.groupCacheTtlMs, deps.now);

  async function onConnect(event: WebSocketConnectEvent): Promise<WebSocketResult> {
    const { connectionId, connectedAt, requestTimeEpoch } = event.requestContext;
    logger.appendKeys({ connectionId });
    const request = parseConnectRequest(event);
    const identity = await verifiedIdentity(event, deps.config.authMode, {
      policies: deps.policies,
      namespace: request.namespace,
    });
    const result = await registerWorkload(
      { store: deps.store, groups, controller: deps.config.controller },
      // Server time only: API Gateway's connect time, never the agent's clock.
      {
        request,
        identity,
        connectionId,
        connectedAt: connectedAt ?? requestTimeEpoch ?? deps.now(),
      },
    );
    logger.appendKeys({ entry: formatRef(result.entry) });
    if (result.outcome === 'created') countMetric(METRIC.registered);
    if (result.outcome === 'reconnected') countMetric(METRIC.reconnected);
    logger.info('workload connected', { outcome: result.outcome, principal: identity.principal });
    return { statusCode: 200 };
  }

  return middy<WebSocketConnectEvent, WebSocketResult>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(errorsToResponses(logger))
    .handler(onConnect);
}

export const handler = lazyHandler(createConnectHandler);
