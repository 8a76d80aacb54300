import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { KubeConfig } from '@kubernetes/client-node';
import type { GroupSource } from '../../lib/domain/group-source.ts';
import type { EpochMillis } from '../../lib/domain/model.ts';
import { logger } from '../../lib/observability.ts';
import { describeGroupSync, type GroupSyncDeps } from '../../lib/projection/group-sync.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import { composeRollouts } from '../../lib/wiring/rollouts.ts';
import { type GroupSyncLoop, startGroupSyncLoop } from './group-sync-loop.ts';

export interface LocalGroupSyncOptions {
  kubeConfig: KubeConfig;
  client: DynamoDBDocumentClient;
  tableName: string;
  registry: GroupSyncDeps['registry'];
  source: GroupSource & { kind: 'cluster' };
  intervalMs: number;
  now: () => EpochMillis;
}

/** `npm start -- --group-source cluster`: the group sync loop over the projection's cluster. */
export function startLocalGroupSync(options: LocalGroupSyncOptions): GroupSyncLoop {
  let failing: string | undefined;
  return startGroupSyncLoop({
    cluster: createKubernetesCluster(options.kubeConfig),
    registry: options.registry,
    rollouts: composeRollouts(options.client, options.tableName),
    ...(options.source.selector ? { selector: options.source.selector } : {}),
    intervalMs: options.intervalMs,
    now: options.now,
    onReport: (report) => {
      if (failing !== undefined) logger.info('group sync recovered');
      failing = undefined;
      for (const change of describeGroupSync(report)) logger.info('group synced', { change });
    },
    onError: (error) => {
      const cause = error instanceof Error ? error.message : String(error);
      // Said once per cause, as the projection's own failures are.
      if (cause !== failing) logger.warn('group sync failing', { cause });
      failing = cause;
    },
  });
}
