import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { logger, metrics } from '../lib/observability.ts';
import { errorsLoggedAndRethrown } from '../lib/protocol/error-response.ts';
import { parseSweeperEvent, type SweeperEvent } from '../lib/protocol/sweeper-event.ts';
import { runHeartbeatLaneTick } from '../lib/sweep/heartbeat-lane-run.ts';
import { runSweepTick } from '../lib/sweep/sweep-run.ts';
import type { SweeperSummary } from '../lib/sweep/sweeper-summary.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';
import { type SweeperDependencies, sweeperDependencies } from '../lib/wiring/sweeper.ts';

export type { SweeperEvent } from '../lib/protocol/sweeper-event.ts';
export type { SweeperSummary } from '../lib/sweep/sweeper-summary.ts';

/**
 * The EventBridge schedule: lane 0's plain tick sweeps (lib/sweep/sweep-run.ts); heartbeat
 * lane k's tick checks its share of the heartbeat groups (lib/sweep/heartbeat-lane-run.ts),
 * under a lease of its own, so no lane delays a deletion. A failure propagates so the
 * invocation fails and the sweeper alarm sees it.
 */
export function createSweeperHandler(
  deps: SweeperDependencies,
): FunctionHandler<SweeperEvent, SweeperSummary> {
  async function onSchedule(event: SweeperEvent, context: Context): Promise<SweeperSummary> {
    const tick = parseSweeperEvent(event, deps.config, deps.now()); // throws InvalidRequestError
    const invocation = {
      ...tick,
      holder: context.awsRequestId,
      remainingMs: () => context.getRemainingTimeInMillis(),
    };
    return tick.lane > 0 ? runHeartbeatLaneTick(deps, invocation) : runSweepTick(deps, invocation);
  }

  return middy<SweeperEvent, SweeperSummary>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(errorsLoggedAndRethrown(logger))
    .handler(onSchedule);
}

export const handler = lazyHandler(createSweeperHandler, sweeperDependencies);
