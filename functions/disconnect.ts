import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { departureOf } from '../lib/domain/disruption.ts';
import { formatRef } from '../lib/domain/model.ts';
import { countMetric, logger, METRIC, metrics } from '../lib/observability.ts';
import { carriedEntry } from '../lib/protocol/carried-entry.ts';
import { REPLACED_CLOSE_REASON } from '../lib/protocol/close-reasons.ts';
import { errorsToResponses } from '../lib/protocol/error-response.ts';
import type {
  WebSocketDisconnectEvent,
  WebSocketResult,
} from '../lib/protocol/websocket-events.ts';
import { unregisterWorkload } from '../lib/registration/unregister-workload.ts';
import { type DisconnectDependencies, disconnectDependencies } from '../lib/wiring/disconnect.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';

/**
 * `$disconnect`: the connection stops holding its entry. API Gateway delivers this event
 * best-effort (it may be late, repeated or missing; liveness checks cover the missing case).
 */
export function createDisconnectHandler(
  deps: DisconnectDependencies,
): FunctionHandler<WebSocketDisconnectEvent, WebSocketResult> {
  async function onDisconnect(event: WebSocketDisconnectEvent): Promise<WebSocketResult> {
    const {
      connectionId,
      connectedAt,
      requestTimeEpoch,
      disconnectReason,
      disconnectStatusCode,
      authorizer,
    } = event.requestContext;
    logger.appendKeys({ connectionId });
    // A clean close (the agent stopping) is a deliberate departure, never held back; no close
    // frame, 1006 or API Gateway's own timeouts may be a fault of ours (fail static).
    const departure = departureOf(disconnectStatusCode, disconnectReason);
    const result = await unregisterWorkload(
      {
        store: deps.store,
        liveness: deps.liveness,
        connectSettleMs: deps.config.connectSettleMs,
      },
      {
        connectionId,
        carried: carriedEntry(authorizer),
        at: requestTimeEpoch ?? deps.now(),
        replaced: disconnectReason === REPLACED_CLOSE_REASON,
        departure,
        ...(connectedAt !== undefined ? { connectedAt } : {}),
      },
    );
    if (result.outcome !== 'unknown-connection') {
      logger.appendKeys({ entry: formatRef(result.entry) });
    }
    if (result.outcome === 'disconnected') countMetric(METRIC.unregistered);
    const dropped = 'dropped' in result ? result.dropped : [];
    if (dropped.length > 0) countMetric(METRIC.phantomHolders, dropped.length);
    logger.info('workload disconnected', {
      outcome: result.outcome,
      departure,
      closeCode: disconnectStatusCode ?? null,
      ...(dropped.length > 0 ? { phantomHoldersDropped: dropped } : {}),
    });
    return { statusCode: 200 };
  }

  // Never log the event (POWERTOOLS_LOGGER_LOG_EVENT): its headers carry credentials.
  return middy<WebSocketDisconnectEvent, WebSocketResult>()
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
    .use(logMetrics(metrics))
    .use(errorsToResponses(logger))
    .handler(onDisconnect);
}

export const handler = lazyHandler(createDisconnectHandler, disconnectDependencies);
