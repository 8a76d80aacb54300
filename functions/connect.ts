import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { attestPlacement, type InstanceAttestation } from '../lib/auth/instance-attestation.ts';
import { refuseGoneInstance } from '../lib/auth/terminated-instances.ts';
import { verifiedIdentity } from '../lib/auth/verified-identity.ts';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { formatRef } from '../lib/domain/model.ts';
import { countMetric, logger, METRIC, metrics } from '../lib/observability.ts';
import { carriedEntry } from '../lib/protocol/carried-entry.ts';
import { parseConnectRequest } from '../lib/protocol/connect-request.ts';
import { errorsToResponses } from '../lib/protocol/error-response.ts';
import { readIdentityEvidence } from '../lib/protocol/identity-evidence.ts';
import type { WebSocketConnectEvent, WebSocketResult } from '../lib/protocol/websocket-events.ts';
import { registerWorkload } from '../lib/registration/register-workload.ts';
import { type ConnectDependencies, connectDependencies } from '../lib/wiring/connect.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';

/** `$connect`: registers the VM. A refusal rejects the WebSocket upgrade with its status. */
export function createConnectHandler(
  deps: ConnectDependencies,
): FunctionHandler<WebSocketConnectEvent, WebSocketResult> {
  async function onConnect(event: WebSocketConnectEvent): Promise<WebSocketResult> {
    const { connectionId, connectedAt, requestTimeEpoch, authorizer } = event.requestContext;
    logger.appendKeys({ connectionId });
    const claimed = parseConnectRequest(event);
    const caller = await verifiedIdentity(event, deps.config.authMode, {
      policies: deps.policies,
      namespace: claimed.namespace,
    });
    // IAM mode: address, zone and instance from EC2's signed document, not the agent's word.
    const { request, identity } =
      deps.config.authMode === 'iam'
        ? attestPlacement(
            deps.attestation ?? noTrustedCertificates(deps),
            readIdentityEvidence(event.headers),
            { request: claimed, identity: caller },
          )
        : { request: claimed, identity: caller };
    if (deps.config.authMode === 'iam' && deps.terminatedInstances) {
      await refuseGoneInstance(deps.terminatedInstances, identity);
    }
    const result = await registerWorkload(
      {
        store: deps.store,
        controller: deps.config.controller,
        agentSkew: deps.config.agentSkew,
        ...(deps.limits ? { limits: deps.limits } : {}),
      },
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
    logger.info('workload connected', {
      outcome: result.outcome,
      principal: identity.principal,
      ...(identity.instanceId === undefined ? {} : { attestedInstance: identity.instanceId }),
    });
    return { statusCode: 200 };
  }

  // Never log the event (POWERTOOLS_LOGGER_LOG_EVENT): its headers carry credentials.
  return middy<WebSocketConnectEvent, WebSocketResult>()
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
    .use(logMetrics(metrics))
    .use(errorsToResponses(logger))
    .handler(onConnect);
}

/**
 * Wiring without attestation (a test's hand-built dependencies): no document can verify, and
 * a connect without one is accepted only when the configuration made documents optional.
 */
function noTrustedCertificates(deps: ConnectDependencies): InstanceAttestation {
  return { mode: deps.config.instanceAttestation, trusted: [] };
}

export const handler = lazyHandler(createConnectHandler, connectDependencies);
