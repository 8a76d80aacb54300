import { setTimeout as sleep } from 'node:timers/promises';
import type { EpochMillis } from '../domain/model.ts';
import { closeConnections } from '../gateway/close-connections.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';
import type { GroupSourceStore } from '../rollout/group-source-store.ts';
import { type RolloutConfig, readRolloutConfig } from '../rollout/rollout-config.ts';
import type { RolloutStore } from '../rollout/rollout-store.ts';
import type { RolloutRunDeps } from '../rollout/run-rollouts.ts';
import { DynamoDbCatalog } from '../store/dynamodb-catalog.ts';
import { DynamoDbEntryHistory } from '../store/dynamodb-entry-history.ts';
import { DynamoDbGroupSource } from '../store/dynamodb-group-source.ts';
import { reportHistoryLost } from './history-lost.ts';
import { composeRollouts } from './rollouts.ts';
import { now, tableWiring } from './table.ts';

/** The rollout function's world: rollouts, the group catalog, the management API, time. */
export interface RolloutDependencies {
  rollouts: RolloutStore;
  catalog: Pick<CatalogStore, 'listNamespaces' | 'listGroups' | 'listEntries'>;
  groupSource: Pick<GroupSourceStore, 'record'>;
  /** API Gateway's management API; absent, removed entries' agents notice at their next rotation. */
  closeConnections?: (ids: readonly string[]) => Promise<{ closed: number; failed: number }>;
  config: RolloutConfig;
  now(): EpochMillis;
  sleep(ms: number): Promise<void>;
  /** Ends a run early (the local runtime stopping). */
  signal?: AbortSignal;
  /** Each entry the rollout changed (its TemplateUpdated event is written with it). */
  onEntryRolledOut?: RolloutRunDeps['onEntryRolledOut'];
}

/** The Lambda wiring: the registry table, the management API for removals, real time. */
export function rolloutDependencies(env: Record<string, string | undefined>): RolloutDependencies {
  const { config, client } = tableWiring(env);
  const connectionsUrl = config.connectionsUrl;
  return {
    rollouts: composeRollouts(client, config.tableName),
    // The catalog alone (it lists), not the whole registry facade: a smaller bundle.
    catalog: new DynamoDbCatalog(
      client,
      config.tableName,
      new DynamoDbEntryHistory(client, config.tableName, reportHistoryLost),
    ),
    groupSource: new DynamoDbGroupSource(client, config.tableName),
    ...(connectionsUrl === undefined
      ? {}
      : {
          closeConnections: (ids) =>
            closeConnections(ids, { endpoint: connectionsUrl, region: config.region }),
        }),
    config: readRolloutConfig(env),
    now,
    sleep: (ms) => sleep(ms),
  };
}
