import type { KubeConfig } from '@kubernetes/client-node';
import type { Cidr } from '../../lib/domain/cidr.ts';
import type { Cluster } from '../../lib/projection/cluster.ts';
import { kubeConfigFromFile } from '../../lib/projection/cluster-access.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import { type ProjectorDeps, reconcile } from '../../lib/projection/projector.ts';
import type { ProjectionReport, Target } from '../../lib/projection/report.ts';

export interface ProjectorLoopOptions {
  /** The cluster's kubeconfig, resolved as kubectl does (lib/projection/kubeconfig.ts)... */
  kubeConfig?: KubeConfig;
  /** ...or a kubeconfig file, with its current context unless `context` names one. */
  kubeconfigPath?: string;
  context?: string;
  store: ProjectorDeps['store'];
  /** The namespaces' address ranges, read once a run. */
  settings?: ProjectorDeps['settings'];
  /** The cluster's pod and Service ranges: no endpoint in them is written. */
  clusterRanges?: readonly Cidr[];
  intervalMs: number;
  targets: readonly Target[];
  /** Each run's report (the local runtime logs changes and errors). */
  onReport?: (report: ProjectionReport) => void;
  onError?: (error: unknown) => void;
}

export interface ProjectorLoop {
  /** Stops the loop and waits for a run in progress. */
  stop(): Promise<void>;
}

/**
 * The local runtime's projector: dynalite has no streams, so instead of the stream fast path
 * a full reconcile runs at start and then every interval. Runs never overlap: a tick that
 * comes while one is going is skipped (the next run sees everything anyway).
 */
export function startProjectorLoop(options: ProjectorLoopOptions): ProjectorLoop {
  if (!options.kubeConfig && !options.kubeconfigPath) {
    throw new Error('startProjectorLoop needs kubeConfig or kubeconfigPath');
  }
  const cluster: Cluster = createKubernetesCluster(
    options.kubeConfig ?? kubeConfigFromFile(options.kubeconfigPath ?? '', options.context),
  );
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    running ??= reconcile(
      {
        store: options.store,
        cluster,
        ...(options.settings ? { settings: options.settings } : {}),
      },
      { targets: options.targets, clusterRanges: options.clusterRanges ?? [] },
    )
      .then(
        (report) => options.onReport?.(report),
        (error: unknown) => options.onError?.(error),
      )
      .finally(() => {
        running = undefined;
      });
  };
  tick();
  const interval = setInterval(tick, options.intervalMs);
  return {
    stop: async () => {
      stopped = true;
      clearInterval(interval);
      await running;
    },
  };
}
