import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { ScheduledEvent } from 'aws-lambda';
import { type Dependencies, type FunctionHandler, lazyHandler } from '../lib/dependencies.ts';
import { countMetric, logger, METRIC, metrics } from '../lib/observability.ts';
import { errorsLoggedAndRethrown } from '../lib/protocol/error-response.ts';
import { runSweep } from '../lib/registration/sweep.ts';

export interface SweeperSummary {
  deleted: number;
  conflicts: number;
  candidatesRead: number;
}

/**
 * The EventBridge schedule: deletes entries disconnected past the grace period, and those
 * whose `$disconnect` never arrived. A failure propagates so the invocation fails and the
 * sweeper alarm sees it; the next run (a minute later) picks up where this one stopped.
 */
export function createSweeperHandler(
  deps: Dependencies,
): FunctionHandler<ScheduledEvent | Record<string, never>, SweeperSummary> {
  async function onSchedule(): Promise<SweeperSummary> {
    const { sweep } = deps.config;
    const result = await runSweep(deps.store, {
      now: deps.now(),
      policy: { gracePeriodMs: sweep.gracePeriodMs, maxConnectionAgeMs: sweep.maxConnectionAgeMs },
      maxDeletes: sweep.maxDeletesPerRun,
      deletesPerSecond: sweep.deletesPerSecond,
    });
    for (const entry of result.deleted) {
      logger.info('entry swept', {
        entry: `${entry.namespace}/${entry.name}`,
        reason: entry.reason,
      });
    }
    countMetric(METRIC.swept, result.deleted.length);
    const summary = {
      deleted: result.deleted.length,
      conflicts: result.conflicts,
      candidatesRead: result.candidatesRead,
    };
    logger.info('sweep finished', { ...summary });
    return summary;
  }

  return middy<ScheduledEvent | Record<string, never>, SweeperSummary>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(errorsLoggedAndRethrown(logger))
    .handler(onSchedule);
}

export const handler = lazyHandler(createSweeperHandler);
