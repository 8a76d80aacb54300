import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { type Dependencies, type FunctionHandler, lazyHandler } from '../lib/dependencies.ts';
import type { EpochMillis } from '../lib/domain/model.ts';
import { formatRef } from '../lib/domain/model.ts';
import { countMetric, logger, METRIC, metrics } from '../lib/observability.ts';
import { type AgentMessage, parseAgentMessage } from '../lib/protocol/agent-messages.ts';
import { errorsToResponses } from '../lib/protocol/error-response.ts';
import { type AgentReply, describeReply, healthAck, pongReply } from '../lib/protocol/replies.ts';
import type { WebSocketMessageEvent, WebSocketResult } from '../lib/protocol/websocket-events.ts';
import { describeConnection } from '../lib/registration/describe-connection.ts';
import { createGroupCache, type GroupReader } from '../lib/registration/group-cache.ts';
import { reportHealth } from '../lib/registration/report-health.ts';

/**
 * The `health`, `describe` and `$default` routes. API Gateway picks the route from
 * `body.action`; `$default` receives what it could not route (non-JSON, unknown actions).
 * The body decides here as well, so a gateway that sends everything to `$default` (or a
 * route key that disagrees with the body) still gets the answer the body asks for.
 */
export function createMessageHandler(
  deps: Dependencies,
): FunctionHandler<WebSocketMessageEvent, WebSocketResult> {
  const groups = createGroupCache(deps.store, deps.config.groupCacheTtlMs, deps.now);

  async function onMessage(event: WebSocketMessageEvent): Promise<WebSocketResult> {
    const { connectionId, routeKey, requestTimeEpoch } = event.requestContext;
    logger.appendKeys({ connectionId, routeKey });
    const message = parseAgentMessage(event.body, event.isBase64Encoded);
    const reply = await answer(deps, groups, message, connectionId, requestTimeEpoch ?? deps.now());
    return { statusCode: 200, body: JSON.stringify(reply) };
  }

  return middy<WebSocketMessageEvent, WebSocketResult>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(errorsToResponses(logger, { refusalsAsReplies: true }))
    .handler(onMessage);
}

async function answer(
  deps: Dependencies,
  groups: GroupReader,
  message: AgentMessage,
  connectionId: string,
  receivedAt: EpochMillis,
): Promise<AgentReply> {
  switch (message.action) {
    case 'health': {
      const report = { connectionId, healthy: message.healthy, at: receivedAt };
      const result = await reportHealth(
        deps.store,
        message.message === undefined ? report : { ...report, message: message.message },
      );
      logger.appendKeys({ entry: formatRef(result.entry) });
      if (result.outcome === 'transitioned') countMetric(METRIC.healthTransitions);
      logger.info('health reported', { outcome: result.outcome, healthy: message.healthy });
      return healthAck();
    }
    case 'describe': {
      const described = await describeConnection({ store: deps.store, groups }, connectionId);
      logger.appendKeys({ entry: formatRef(described.entry.metadata) });
      return describeReply(described.entry, described.probe);
    }
    case 'ping':
      return pongReply();
  }
}

export const handler = lazyHandler(createMessageHandler);
