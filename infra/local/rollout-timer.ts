import { setTimeout as sleep } from 'node:timers/promises';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createRolloutHandler, type RolloutSummary } from '../../functions/rollout.ts';
import type { EpochMillis } from '../../lib/domain/model.ts';
import { closeConnections } from '../../lib/gateway/close-connections.ts';
import { logger } from '../../lib/observability.ts';
import type { CatalogStore } from '../../lib/registration/catalog-store.ts';
import type { RolloutConfig } from '../../lib/rollout/rollout-config.ts';
import { DynamoDbGroupSource } from '../../lib/store/dynamodb-group-source.ts';
import { composeRollouts } from '../../lib/wiring/rollouts.ts';
import { lambdaContext } from './gateway-events.ts';
import { inInvocationScope } from './invocation-scope.ts';
import { startSweepTimer } from './sweep-timer.ts';

export interface RolloutTimerOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  region: string;
  catalog: Pick<CatalogStore, 'listNamespaces' | 'listGroups' | 'listEntries'>;
  config: RolloutConfig;
  /** The local gateway's management API, known once it listens. */
  managementUrl: () => string;
  intervalMs: number;
  now: () => EpochMillis;
}

export interface RolloutTimer {
  /** Runs the rollout function now (as its EventBridge schedule would). */
  rolloutNow(): Promise<RolloutSummary>;
  /** Ends a run in progress at its next page (its progress is saved), then the schedule. */
  stop(): Promise<void>;
}

/** The local stand-in for the rollout function's schedule: once at start, then every interval. */
export async function startRolloutTimer(options: RolloutTimerOptions): Promise<RolloutTimer> {
  const stopping = new AbortController();
  const handler = createRolloutHandler({
    rollouts: composeRollouts(options.client, options.tableName),
    catalog: options.catalog,
    groupSource: new DynamoDbGroupSource(options.client, options.tableName),
    closeConnections: (ids) =>
      closeConnections(ids, { endpoint: options.managementUrl(), region: options.region }),
    config: options.config,
    now: options.now,
    sleep: (ms) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined),
    signal: stopping.signal,
  });
  const rolloutNow = () => {
    const context = lambdaContext('registrar-rollout', options.region, 15 * 60_000);
    return inInvocationScope(context.awsRequestId, () => handler({}, context));
  };
  const timer = await startSweepTimer(rolloutNow, options.intervalMs, (error) =>
    logger.error('rollout run failed', { error: String(error) }),
  );
  return {
    rolloutNow,
    stop: async () => {
      stopping.abort();
      await timer.stop();
    },
  };
}
