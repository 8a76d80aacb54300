import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context, ScheduledEvent } from 'aws-lambda';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { logger, metrics } from '../lib/observability.ts';
import { processGroupRemovals } from '../lib/rollout/group-removals.ts';
import { ROLLOUT_METRIC } from '../lib/rollout/rollout-metrics.ts';
import { type RolloutRunSummary, runRollouts } from '../lib/rollout/run-rollouts.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';
import { type RolloutDependencies, rolloutDependencies } from '../lib/wiring/rollout.ts';

export type { RolloutDependencies };

export interface RolloutSummary extends Omit<RolloutRunSummary, 'problems'> {
  problems: number;
  /** Groups removed because the cluster deleted them (groups from the cluster). */
  removed: string[];
  /** `skipped`: another run held the lease. */
  mode: 'ran' | 'skipped';
}

/** Kept back from the invocation's deadline: the page in flight and the metrics' flush fit. */
export const ROLLOUT_DEADLINE_MARGIN_MS = 10_000;

/**
 * The rollout function (an EventBridge schedule, every minute; a timer locally): removes the
 * groups the group sync saw deleted in the cluster, then brings live entries to their group's
 * current template, paced, and never on the connect path. One run at a time (a lease in the
 * table); a run that stops at its deadline or dies is continued by the next from its cursor.
 */
export function createRolloutHandler(
  deps: RolloutDependencies,
): FunctionHandler<ScheduledEvent | Record<string, never>, RolloutSummary> {
  async function onSchedule(
    _event: ScheduledEvent | Record<string, never>,
    context: Context,
  ): Promise<RolloutSummary> {
    const started = deps.now();
    const deadline =
      started +
      Math.min(
        deps.config.runTimeMs,
        context.getRemainingTimeInMillis() - ROLLOUT_DEADLINE_MARGIN_MS,
      );
    const holder = context.awsRequestId;
    const lease = await deps.rollouts.acquireLease(
      holder,
      started,
      deadline + ROLLOUT_DEADLINE_MARGIN_MS,
    );
    if (!lease.acquired) {
      logger.info('another rollout run is still going; this tick skips', { holder: lease.holder });
      return { ...emptySummary(), mode: 'skipped' };
    }
    try {
      // Every run, so clients (registrar apply) know where groups come from within a minute of a
      // deploy that changed it. A failure is retried by the next run; it must not stop this one.
      await deps.groupSource.record(deps.config.groupSource, started).catch((error: unknown) => {
        logger.warn('could not record the group source; the next run tries again', {
          reason: error instanceof Error ? error.message : String(error),
        });
      });
      const removals = await processGroupRemovals(
        {
          store: deps.rollouts,
          catalog: deps.catalog,
          closeConnections: deps.closeConnections ?? noManagementApi,
          groupsFromCluster: deps.config.groupSource.kind === 'cluster',
          now: deps.now,
        },
        await deps.rollouts.listRollouts(),
      );
      for (const removed of removals.removed) {
        logger.info('group removed: it was deleted in the cluster', removed);
      }
      if (removals.held.length > 0) {
        logger.warn('group removals held: the cluster listed no WorkloadGroup', {
          groups: removals.held,
        });
      }
      const run = await runRollouts(
        {
          store: deps.rollouts,
          groups: deps.catalog,
          now: deps.now,
          sleep: deps.sleep,
          ...(deps.onEntryRolledOut ? { onEntryRolledOut: deps.onEntryRolledOut } : {}),
        },
        {
          deadline,
          writesPerSecond: deps.config.writesPerSecond,
          concurrency: 16,
          pageSize: 100,
          recheckMs: deps.config.recheckMs,
          ...(deps.signal ? { signal: deps.signal } : {}),
        },
      );
      for (const problem of run.problems)
        logger.warn('rollout pace annotation ignored', { problem });
      for (const [group, entries] of Object.entries(run.rolled)) {
        logger.info('template rolled out', { group, entries });
      }
      for (const done of run.completed) logger.info('rollout complete', { ...done });
      if (run.waiting > 0) {
        logger.info("entries of an earlier release wait for their agent's next connect", {
          waiting: run.waiting,
        });
      }
      recordRolloutMetrics(run, removals.removed.length);
      const summary: RolloutSummary = {
        ...run,
        problems: run.problems.length,
        removed: removals.removed.map((r) => r.group),
        mode: 'ran',
      };
      logger.info('rollout run finished', { ...summary, ms: deps.now() - started });
      return summary;
    } finally {
      await deps.rollouts.releaseLease(holder).catch(() => undefined);
    }
  }

  return middy<ScheduledEvent | Record<string, never>, RolloutSummary>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .handler(onSchedule);
}

async function noManagementApi(ids: readonly string[]) {
  logger.warn(
    'no management endpoint: the agents of removed entries notice at their next rotation',
    {
      connections: ids.length,
    },
  );
  return { closed: 0, failed: ids.length };
}

/** Every run emits them, zeros included: an alarm or dashboard sees the function alive. */
function recordRolloutMetrics(run: RolloutRunSummary, removed: number): void {
  metrics.addMetric(ROLLOUT_METRIC.entriesUpdated, MetricUnit.Count, run.updated);
  metrics.addMetric(ROLLOUT_METRIC.conflicts, MetricUnit.Count, run.conflicts);
  metrics.addMetric(ROLLOUT_METRIC.waiting, MetricUnit.Count, run.waiting);
  metrics.addMetric(ROLLOUT_METRIC.paused, MetricUnit.Count, run.paused.length);
  metrics.addMetric(ROLLOUT_METRIC.problems, MetricUnit.Count, run.problems.length);
  metrics.addMetric(ROLLOUT_METRIC.groupsRemoved, MetricUnit.Count, removed);
  metrics.addMetric(ROLLOUT_METRIC.stoppedEarly, MetricUnit.Count, run.stoppedEarly ? 1 : 0);
}

function emptySummary(): Omit<RolloutSummary, 'mode'> {
  return {
    rolled: {},
    updated: 0,
    conflicts: 0,
    completed: [],
    paused: [],
    waiting: 0,
    problems: 0,
    removed: [],
    stoppedEarly: false,
  };
}

export const handler = lazyHandler(createRolloutHandler, rolloutDependencies);
