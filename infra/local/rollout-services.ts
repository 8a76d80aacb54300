import type { KubeConfig } from '@kubernetes/client-node';
import type { RolloutSummary } from '../../functions/rollout.ts';
import type { GroupSource } from '../../lib/domain/group-source.ts';
import type { EpochMillis } from '../../lib/domain/model.ts';
import type { GroupSyncReport } from '../../lib/projection/group-sync.ts';
import type { CatalogStore } from '../../lib/registration/catalog-store.ts';
import { ROLLOUT_ENV, readRolloutConfig } from '../../lib/rollout/rollout-config.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';

export interface RolloutServicesOptions {
  /** The functions' environment (REGISTRAR_GROUP_SOURCE, REGISTRAR_ROLLOUT_*). */
  env: Record<string, string>;
  dynamoDbEndpoint: string;
  tableName: string;
  region: string;
  catalog: Pick<
    CatalogStore,
    | 'listNamespaces'
    | 'listGroups'
    | 'listEntries'
    | 'applyGroup'
    | 'groupSizeRefusal'
    | 'entrySizeRefusal'
  >;
  /** The local gateway's management API (removed groups' connections are closed there). */
  managementUrl: () => string;
  rolloutIntervalMs: number;
  /** The projection's cluster, when the runtime projects; groups from the cluster need one. */
  kubeConfig?: KubeConfig;
  syncIntervalMs: number;
  now: () => EpochMillis;
}

export interface RolloutServices {
  rolloutNow(): Promise<RolloutSummary>;
  groupSyncNow?(): Promise<GroupSyncReport>;
  stop(): Promise<void>;
}

/**
 * The local runtime's template rollouts (the rollout function on a timer) and, with groups
 * from the cluster, the group sync (a watch and a periodic list of the projection's cluster).
 */
export async function startRolloutServices(
  options: RolloutServicesOptions,
): Promise<RolloutServices> {
  const config = readRolloutConfig(options.env);
  if (config.groupSource.kind === 'cluster' && !options.kubeConfig) {
    throw new Error(
      'groups from the cluster need a cluster: add --project (or --kubeconfig PATH, --context NAME)',
    );
  }
  const client = createDocumentClient({
    region: options.region,
    endpoint: options.dynamoDbEndpoint,
  });
  const { startRolloutTimer } = await import('./rollout-timer.ts');
  const timer = await startRolloutTimer({
    client,
    tableName: options.tableName,
    region: options.region,
    catalog: options.catalog,
    config,
    managementUrl: options.managementUrl,
    intervalMs: options.rolloutIntervalMs,
    now: options.now,
  });
  let sync: { syncNow(): Promise<GroupSyncReport>; stop(): Promise<void> } | undefined;
  if (config.groupSource.kind === 'cluster' && options.kubeConfig) {
    const { startLocalGroupSync } = await import('./local-group-sync.ts');
    sync = startLocalGroupSync({
      kubeConfig: options.kubeConfig,
      client,
      tableName: options.tableName,
      registry: options.catalog,
      source: config.groupSource,
      intervalMs: options.syncIntervalMs,
      now: options.now,
    });
  }
  return {
    rolloutNow: timer.rolloutNow,
    ...(sync ? { groupSyncNow: sync.syncNow } : {}),
    stop: async () => {
      await Promise.allSettled([sync?.stop(), timer.stop()]);
      client.destroy();
    },
  };
}

/** The functions' variables for a group source (`npm start --group-source`). */
export function groupSourceEnv(source: GroupSource | undefined): Record<string, string> {
  if (source === undefined) return {};
  return {
    [ROLLOUT_ENV.groupSource]: source.kind,
    ...(source.kind === 'cluster' && source.selector
      ? { [ROLLOUT_ENV.groupSelector]: source.selector }
      : {}),
  };
}
