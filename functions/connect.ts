import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { type Dependencies, type FunctionHandler, lazyHandler } from '../lib/dependencies.ts';
import { formatRef } from '../lib/domain/model.ts';
import { countMetric, logger, METRIC, metrics } from '../lib/observability.ts';
import { carriedEntry } from '../lib/protocol/carried-entry.ts';
import { parseConnectRequest } from '../lib/protocol/connect-request.ts';
import { errorsToResponses } from '../lib/protocol/error-response.ts';
import { verifiedIdentity } from '../lib/protocol/identity.ts';
import type { WebSocketConnectEvent, WebSocketResult } from '../lib/protocol/websocket-events.ts';
import { registerWorkload } from '../lib/registration/register-workload.ts';

/** `$connect`: registers the VM. A refusal rejects the WebSocket upgrade with its status. */
export function createConnectHandler(
  deps: Dependencies,
): FunctionHandler<WebSocketConnectEvent, WebSocketResult> {
  async function onConnect(event: WebSocketConnectEvent): Promise<WebSocketResult> {
    const { connectionId, connectedAt, requestTimeEpoch, authorizer } = event.requestContext;
    logger.appendKeys({ connectionId });
    const request = parseConnectRequest(event);
    const identity = await verifiedIdentity(event, deps.config.authMode, {
      policies: deps.policies,
      namespace: request.namespace,
    });
    const result = await registerWorkload(
      { store: deps.store, controller: deps.config.controller },
      // Server time only: API Gateway's connect time, never the agent's clock.
      {
        request,
        identity,
        connectionId,
        connectedAt: connectedAt ?? requestTimeEpoch ?? deps.now(),
        carried: carriedEntry(authorizer),
      },
    );
    logger.appendKeys({ entry: formatRef(result.entry) });
    if (result.outcome === 'created') countMetric(METRIC.registered);
    else countMetric(METRIC.reconnected);
    logger.info('workload connected', { outcome: result.outcome, principal: identity.principal });
    return { statusCode: 200 };
  }

  // Never log the event (POWERTOOLS_LOGGER_LOG_EVENT): its headers carry credentials.
  return middy<WebSocketConnectEvent, WebSocketResult>()
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
    .use(logMetrics(metrics))
    .use(errorsToResponses(logger))
    .handler(onConnect);
}

export const handler = lazyHandler(createConnectHandler);
