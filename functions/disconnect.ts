import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { type Dependencies, type FunctionHandler, lazyHandler } from '../lib/dependencies.ts';
import { formatRef } from '../lib/domain/model.ts';
import { countMetric, logger, METRIC, metrics } from '../lib/observability.ts';
import { REPLACED_CLOSE_REASON } from '../lib/protocol/close-reasons.ts';
import { errorsToResponses } from '../lib/protocol/error-response.ts';
import type {
  WebSocketDisconnectEvent,
  WebSocketResult,
} from '../lib/protocol/websocket-events.ts';
import { unregisterWorkload } from '../lib/registration/unregister-workload.ts';

/**
 * `$disconnect`: marks the entry disconnected. API Gateway delivers this event best-effort
 * (it may be late, repeated or missing; the sweeper covers the missing case).
 */
export function createDisconnectHandler(
  deps: Dependencies,
): FunctionHandler<WebSocketDisconnectEvent, WebSocketResult> {
  async function onDisconnect(event: WebSocketDisconnectEvent): Promise<WebSocketResult> {
    const { connectionId, requestTimeEpoch, disconnectReason } = event.requestContext;
    logger.appendKeys({ connectionId });
    const result = await unregisterWorkload(deps.store, {
      connectionId,
      at: requestTimeEpoch ?? deps.now(),
      replaced: disconnectReason === REPLACED_CLOSE_REASON,
    });
    if (result.outcome !== 'unknown-connection')
      logger.appendKeys({ entry: formatRef(result.entry) });
    if (result.outcome === 'disconnected') countMetric(METRIC.unregistered);
    logger.info('workload disconnected', { outcome: result.outcome });
    return { statusCode: 200 };
  }

  return middy<WebSocketDisconnectEvent, WebSocketResult>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(errorsToResponses(logger))
    .handler(onDisconnect);
}

export const handler = lazyHandler(createDisconnectHandler);
