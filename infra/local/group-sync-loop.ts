import { setTimeout as sleep } from 'node:timers/promises';
import type { EpochMillis } from '../../lib/domain/model.ts';
import { type Cluster, WatchExpiredError } from '../../lib/projection/cluster.ts';
import {
  type GroupSyncDeps,
  type GroupSyncReport,
  syncGroups,
} from '../../lib/projection/group-sync.ts';

export interface GroupSyncLoopOptions {
  cluster: Cluster;
  registry: GroupSyncDeps['registry'];
  rollouts: GroupSyncDeps['rollouts'];
  selector?: string;
  /** A full sync this often, whatever the watch says (it repairs a lost event). */
  intervalMs: number;
  now: () => EpochMillis;
  onReport?: (report: GroupSyncReport) => void;
  onError?: (error: unknown) => void;
}

export interface GroupSyncLoop {
  /** Syncs now (after a sync in progress), and resolves with its report. */
  syncNow(): Promise<GroupSyncReport>;
  stop(): Promise<void>;
}

/** How long a watch stays open before the server ends it and a new one resumes. */
const WATCH_TIMEOUT_S = 25;
/** A change in the cluster often comes in a burst (kubectl apply -f DIR): one sync after it. */
const DEBOUNCE_MS = 200;

/**
 * Groups from the cluster, locally: a watch on the cluster's WorkloadGroups is the trigger
 * (a change reaches the registry within about a second), and a full sync (list and compare)
 * is the truth, also every interval, so a lost watch event or a failed write is repaired
 * within one interval. The watch resumes from the last version it saw; one the server no
 * longer keeps (410) starts over from a list.
 */
export function startGroupSyncLoop(options: GroupSyncLoopOptions): GroupSyncLoop {
  let stopped = false;
  let running: Promise<GroupSyncReport> | undefined;
  let again = false;
  let debounce: NodeJS.Timeout | undefined;

  const run = (): Promise<GroupSyncReport> => {
    if (running) {
      again = true;
      return running.then(() => run());
    }
    running = syncGroups(
      { cluster: options.cluster, registry: options.registry, rollouts: options.rollouts },
      { ...(options.selector ? { selector: options.selector } : {}), now: options.now() },
    )
      .then((report) => {
        options.onReport?.(report);
        return report;
      })
      .finally(() => {
        running = undefined;
        if (again && !stopped) {
          again = false;
          void run().catch((error: unknown) => options.onError?.(error));
        }
      });
    return running;
  };
  const tick = () => {
    if (!stopped) void run().catch((error: unknown) => options.onError?.(error));
  };
  const changed = () => {
    clearTimeout(debounce);
    debounce = setTimeout(tick, DEBOUNCE_MS);
  };

  let watching: { stop(): void } | undefined;
  const watchLoop = async () => {
    let resourceVersion: string | undefined;
    while (!stopped && options.cluster.watch) {
      try {
        const watch = await options.cluster.watch(
          'WorkloadGroup',
          {
            ...(options.selector ? { labelSelector: options.selector } : {}),
            ...(resourceVersion ? { resourceVersion } : {}),
            timeoutSeconds: WATCH_TIMEOUT_S,
          },
          (event) => {
            resourceVersion = event.object.metadata.resourceVersion ?? resourceVersion;
            if (event.type !== 'BOOKMARK') changed();
          },
        );
        watching = watch;
        if (stopped) watch.stop();
        const error = await watch.done;
        if (error instanceof WatchExpiredError) {
          resourceVersion = undefined;
          changed();
        } else if (error && !stopped) {
          options.onError?.(error);
          await sleep(1_000);
        }
      } catch (error) {
        if (!stopped) {
          options.onError?.(error);
          await sleep(1_000);
        }
      }
    }
  };

  tick();
  const interval = setInterval(tick, options.intervalMs);
  const watcher = watchLoop();
  return {
    syncNow: () => run(),
    stop: async () => {
      stopped = true;
      clearInterval(interval);
      clearTimeout(debounce);
      watching?.stop();
      await Promise.allSettled([watcher, running]);
    },
  };
}
