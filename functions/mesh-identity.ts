import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { MiddlewareObj } from '@middy/core';
import middy from '@middy/core';
import type { PolicyReader } from '../lib/auth/policy-store.ts';
import type { TokenStore } from '../lib/auth/token-store.ts';
import type { Config } from '../lib/config.ts';
import { dependenciesFromEnv, type FunctionHandler } from '../lib/dependencies.ts';
import { MessageBudget, SIDECAR_MESSAGE_BUDGET } from '../lib/domain/message-budget.ts';
import type { EpochMillis } from '../lib/domain/model.ts';
import { type IssueSidecarStore, issueSidecar } from '../lib/mesh-identity/issue-sidecar.ts';
import { createKubeMeshIssuer } from '../lib/mesh-identity/kube-mesh-issuer.ts';
import { meshKubeConfig } from '../lib/mesh-identity/mesh-cluster-access.ts';
import type { MeshIssuer } from '../lib/mesh-identity/mesh-issuer.ts';
import { type MeshSettings, readMeshSettings } from '../lib/mesh-identity/mesh-settings.ts';
import { logger, metrics } from '../lib/observability.ts';
import { parseAgentMessage } from '../lib/protocol/agent-messages.ts';
import { carriedEntry } from '../lib/protocol/carried-entry.ts';
import { countOutcome, errorOutcome, logError } from '../lib/protocol/error-response.ts';
import { type ConnectionCloser, overBudget } from '../lib/protocol/message-budget-guard.ts';
import {
  SIDECAR_ACTION,
  type SidecarErrorReply,
  SidecarUnavailableError,
} from '../lib/protocol/sidecar-message.ts';
import type { WebSocketMessageEvent, WebSocketResult } from '../lib/protocol/websocket-events.ts';

/** Counted per mesh identity handed out (docs/cost.md prices the refreshes). */
export const MESH_IDENTITY_METRIC = 'MeshIdentitiesIssued';

export interface MeshIdentityDeps {
  config: Pick<Config, 'authMode' | 'instanceAttestation'>;
  store: IssueSidecarStore;
  tokens: Pick<TokenStore, 'getToken'>;
  policies: PolicyReader | undefined;
  /** Absent: no cluster is configured, and every `sidecar` is answered SidecarUnavailable. */
  issuer: MeshIssuer | undefined;
  settings: MeshSettings;
  /** Closes a connection over its budget of asks; absent, such asks are only refused. */
  closeConnection?: ConnectionCloser;
  now: () => EpochMillis;
}

/**
 * The `sidecar` route: a VM's sidecar bootstrap and a fresh mesh identity (a ServiceAccount
 * token of the entry's own service account), for the entry its connection holds. Its own
 * function, so that only it holds the cluster permission to mint (`create` on
 * `serviceaccounts/token`); the message function keeps none. Never logs the token, the reply
 * or the event (the reply carries the token; the event's context carries the join token id).
 */
export function createMeshIdentityHandler(
  deps: MeshIdentityDeps,
): FunctionHandler<WebSocketMessageEvent, WebSocketResult> {
  // Per function instance: each connection's asks in the current window.
  const budget = new MessageBudget(SIDECAR_MESSAGE_BUDGET);
  async function onSidecar(event: WebSocketMessageEvent): Promise<WebSocketResult> {
    const { connectionId, requestTimeEpoch, authorizer, identity } = event.requestContext;
    logger.appendKeys({ connectionId, routeKey: SIDECAR_ACTION });
    const verdict = budget.admit(connectionId, deps.now());
    if (verdict !== 'admitted') {
      return overBudget(connectionId, verdict, deps.closeConnection, {
        policy: SIDECAR_MESSAGE_BUDGET,
        action: SIDECAR_ACTION,
      });
    }
    const message = parseAgentMessage(event.body, event.isBase64Encoded);
    if (message.action !== SIDECAR_ACTION) {
      // A gateway that routed another action here: this function answers `sidecar` only.
      throw new SidecarUnavailableError(
        `this route answers 'sidecar' only, not '${message.action}'`,
      );
    }
    if (!deps.issuer) {
      throw new SidecarUnavailableError(
        "the registrar cannot answer 'sidecar': no Kubernetes cluster is configured to mint mesh identities in (deploy with projectorClusterName, or npm start --project)",
      );
    }
    const reply = await issueSidecar(
      {
        store: deps.store,
        tokens: deps.tokens,
        policies: deps.policies,
        authMode: deps.config.authMode,
        instanceAttestation: deps.config.instanceAttestation,
        issuer: deps.issuer,
        settings: deps.settings,
      },
      {
        connectionId,
        carried: carriedEntry(authorizer),
        caller: {
          tokenId: typeof authorizer?.tokenId === 'string' ? authorizer.tokenId : undefined,
          userArn: identity?.userArn ?? undefined,
        },
        at: requestTimeEpoch ?? deps.now(),
      },
    );
    metrics.addMetric(MESH_IDENTITY_METRIC, MetricUnit.Count, 1);
    logger.info('mesh identity issued', {
      entry: reply.entry,
      serviceAccount: reply.serviceAccount,
      audience: reply.token.audience,
      expiresAt: reply.token.expiresAt,
    });
    return { statusCode: 200, body: JSON.stringify(reply) };
  }

  return middy<WebSocketMessageEvent, WebSocketResult>()
    .use(injectLambdaContext(logger, { resetKeys: true, logEvent: false }))
    .use(logMetrics(metrics))
    .use(sidecarRefusals())
    .handler(onSidecar);
}

/**
 * Refusals as replies that name their action (`{"action":"sidecar","ok":false,...}`), so the
 * agent matches them to its request; faults stay 500s that reveal nothing.
 */
function sidecarRefusals(): MiddlewareObj<unknown, WebSocketResult> {
  return {
    onError: (request) => {
      const outcome = errorOutcome(request.error);
      logError(logger, request.error, outcome);
      countOutcome(request.error, outcome);
      const reply: SidecarErrorReply = { action: SIDECAR_ACTION, ...outcome.reply };
      request.response = {
        statusCode: outcome.expected ? 200 : outcome.statusCode,
        body: JSON.stringify(reply),
      };
    },
  };
}

/** The Lambda wiring: the registry, the mesh settings, and the projector's cluster. */
export function meshIdentityDependenciesFromEnv(
  env: Record<string, string | undefined>,
): MeshIdentityDeps {
  const deps = dependenciesFromEnv(env);
  const kubeConfig = meshKubeConfig(env, deps.config.region);
  return {
    config: deps.config,
    store: deps.store,
    tokens: deps.tokens,
    policies: deps.policies,
    issuer: kubeConfig ? createKubeMeshIssuer({ kubeConfig }) : undefined,
    settings: readMeshSettings(env),
    ...(deps.closeConnection ? { closeConnection: deps.closeConnection } : {}),
    now: deps.now,
  };
}

let built: FunctionHandler<WebSocketMessageEvent, WebSocketResult> | undefined;

/** Dependencies are read on the first invocation, never at import (see lib/dependencies.ts). */
export const handler: FunctionHandler<WebSocketMessageEvent, WebSocketResult> = async (
  event,
  context,
) => {
  built ??= createMeshIdentityHandler(meshIdentityDependenciesFromEnv(process.env));
  return built(event, context);
};
