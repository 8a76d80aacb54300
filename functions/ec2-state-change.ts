import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { logger, METRIC, metrics, recordCount } from '../lib/observability.ts';
import { type Ec2StateChangeEvent, parseEc2StateChange } from '../lib/protocol/ec2-state-change.ts';
import { errorsLoggedAndRethrown } from '../lib/protocol/error-response.ts';
import {
  applyInstanceStateChange,
  type Ec2StateChangeSummary,
} from '../lib/registration/instance-state-change.ts';
import {
  type Ec2StateChangeDependencies,
  ec2StateChangeDependencies,
} from '../lib/wiring/ec2-state-change.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';

export type { Ec2StateChangeSummary } from '../lib/registration/instance-state-change.ts';

/**
 * EventBridge's EC2 instance state-change notifications (the rule lets through the states the
 * stack's `ec2States` option names, and in IAM mode also shutting-down and terminated):
 * remembers a terminated instance (IAM mode; lib/auth/terminated-instances.ts) and removes the
 * instance's entries at once. A failure propagates, so EventBridge retries the event and the
 * function's error alarm sees it; a repeat keeps the first time and finds nothing left to
 * remove.
 */
export function createEc2StateChangeHandler(
  deps: Ec2StateChangeDependencies,
): FunctionHandler<Ec2StateChangeEvent, Ec2StateChangeSummary> {
  async function onStateChange(event: Ec2StateChangeEvent): Promise<Ec2StateChangeSummary> {
    const change = parseEc2StateChange(event);
    logger.appendKeys({ instanceId: change.instanceId, state: change.state });
    const { rememberedTerminated, ...summary } = await applyInstanceStateChange(deps, change);
    recordCount(METRIC.instanceEntriesRemoved, summary.removed.length);
    logger.info('instance state change', { ...summary, rememberedTerminated });
    return summary;
  }

  return middy<Ec2StateChangeEvent, Ec2StateChangeSummary>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(errorsLoggedAndRethrown(logger))
    .handler(onStateChange);
}

export const handler = lazyHandler(createEc2StateChangeHandler, ec2StateChangeDependencies);
