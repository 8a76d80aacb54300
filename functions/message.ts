import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { MessageBudget } from '../lib/domain/message-budget.ts';
import type { EpochMillis, ObjectRef } from '../lib/domain/model.ts';
import { formatRef } from '../lib/domain/model.ts';
import { countMetric, logger, METRIC, metrics } from '../lib/observability.ts';
import { type AgentMessage, readAgentMessage } from '../lib/protocol/agent-messages.ts';
import { carriedEntry } from '../lib/protocol/carried-entry.ts';
import { type DrainAck, drainAck } from '../lib/protocol/drain-message.ts';
import { errorsToResponses } from '../lib/protocol/error-response.ts';
import { type HeartbeatAck, heartbeatAck } from '../lib/protocol/heartbeat-notice.ts';
import { overBudget } from '../lib/protocol/message-budget-guard.ts';
import {
  type AgentReply,
  describeReply,
  healthAck,
  pongReply,
  withIgnoredFields,
} from '../lib/protocol/replies.ts';
import { SidecarUnavailableError } from '../lib/protocol/sidecar-action.ts';
import type { WebSocketMessageEvent, WebSocketResult } from '../lib/protocol/websocket-events.ts';
import { acknowledgeHeartbeat } from '../lib/registration/acknowledge-heartbeat.ts';
import { describeConnection } from '../lib/registration/describe-connection.ts';
import { drainWorkload } from '../lib/registration/drain-workload.ts';
import { reportHealth } from '../lib/registration/report-health.ts';
import { RELEASE } from '../lib/release.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';
import { type MessageDependencies, messageDependencies } from '../lib/wiring/message.ts';

/**
 * The `health`, `describe`, `drain` and `$default` routes. API Gateway picks the route from
 * `body.action`; `$default` receives what it could not route (non-JSON, unknown actions).
 * The body decides here as well, so a gateway that sends everything to `$default` (or a
 * route key that disagrees with the body) still gets the answer the body asks for.
 */
export function createMessageHandler(
  deps: MessageDependencies,
): FunctionHandler<WebSocketMessageEvent, WebSocketResult> {
  // Per function instance: each connection's messages in the current window.
  const budget = new MessageBudget();
  async function onMessage(event: WebSocketMessageEvent): Promise<WebSocketResult> {
    const { connectionId, routeKey, requestTimeEpoch, authorizer } = event.requestContext;
    logger.appendKeys({ connectionId, routeKey });
    const connection = { connectionId, carried: carriedEntry(authorizer) };
    const receivedAt = requestTimeEpoch ?? deps.now();
    const verdict = budget.admit(connectionId, deps.now());
    if (verdict !== 'admitted') return overBudget(connectionId, verdict, deps.closeConnection);
    const { message, ignoredFields } = readAgentMessage(event.body, event.isBase64Encoded);
    const reply = await answer(deps, message, connection, receivedAt, ignoredFields);
    return { statusCode: 200, body: JSON.stringify(reply) };
  }

  // Never log the event (POWERTOOLS_LOGGER_LOG_EVENT): its headers carry credentials.
  return middy<WebSocketMessageEvent, WebSocketResult>()
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
    .use(logMetrics(metrics))
    .use(errorsToResponses(logger, { refusalsAsReplies: true }))
    .handler(onMessage);
}

async function answer(
  deps: MessageDependencies,
  message: AgentMessage,
  connection: { connectionId: string; carried: ObjectRef | undefined },
  receivedAt: EpochMillis,
  ignoredFields: readonly string[],
): Promise<AgentReply | DrainAck | HeartbeatAck> {
  switch (message.action) {
    case 'drain': {
      const { entry } = await drainWorkload(deps.store, { ...connection, at: receivedAt });
      logger.appendKeys({ entry: formatRef(entry) });
      countMetric(METRIC.drained);
      logger.info('workload draining');
      return drainAck();
    }
    case 'health': {
      const result = await reportHealth(deps.store, {
        ...connection,
        healthy: message.healthy,
        at: receivedAt,
        ...(message.message === undefined ? {} : { message: message.message }),
      });
      logger.appendKeys({ entry: formatRef(result.entry) });
      if (result.outcome === 'transitioned') countMetric(METRIC.healthTransitions);
      logger.info('health reported', {
        outcome: result.outcome,
        healthy: message.healthy,
        // Powertools drops a `message` key from the extra fields: the reason travels as `reason`.
        ...(message.healthy || message.message === undefined ? {} : { reason: message.message }),
      });
      return withIgnoredFields(healthAck(), ignoredFields);
    }
    case 'describe': {
      const described = await describeConnection(
        deps.store,
        connection.connectionId,
        connection.carried,
      );
      logger.appendKeys({ entry: formatRef(described.entry.metadata) });
      return withIgnoredFields(
        {
          ...describeReply(
            described.entry,
            described.probe,
            connection.connectionId,
            described.maintenance,
            described.heartbeat,
          ),
          registrarVersion: RELEASE,
        },
        ignoredFields,
      );
    }
    case 'heartbeat': {
      const acked = await acknowledgeHeartbeat(deps.store, connection, message, receivedAt);
      logger.appendKeys({ entry: formatRef(acked.entry) });
      logger.info('heartbeat acknowledged', {
        intervalMs: acked.heartbeat.intervalMs,
        misses: acked.heartbeat.misses,
      });
      return heartbeatAck(acked.heartbeat);
    }
    case 'ping':
      return pongReply();
    case 'sidecar':
      // Reached only when no mesh function serves the `sidecar` route: no cluster is set up.
      throw new SidecarUnavailableError(
        "the registrar cannot answer 'sidecar': no Kubernetes cluster is configured to mint mesh identities in (deploy with projectorClusterName, or npm start --project); registration is unaffected",
      );
  }
}

export const handler = lazyHandler(createMessageHandler, messageDependencies);
