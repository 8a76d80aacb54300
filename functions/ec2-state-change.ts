import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { rememberGoneInstance } from '../lib/auth/terminated-instances.ts';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { formatRef } from '../lib/domain/model.ts';
import { logger, METRIC, metrics, recordCount } from '../lib/observability.ts';
import { type Ec2StateChangeEvent, parseEc2StateChange } from '../lib/protocol/ec2-state-change.ts';
import { errorsLoggedAndRethrown } from '../lib/protocol/error-response.ts';
import { removeInstanceEntries } from '../lib/registration/remove-instance-entries.ts';
import {
  type Ec2StateChangeDependencies,
  ec2StateChangeDependencies,
} from '../lib/wiring/ec2-state-change.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';

export interface Ec2StateChangeSummary {
  instanceId: string;
  state: string;
  removed: string[];
  kept: string[];
  ignored: boolean;
}

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
    // First: a connect signed with what the instance left behind is refused from now on,
    // even if the removal below fails and is retried.
    const remembered = deps.terminatedInstances
      ? await rememberGoneInstance(deps.terminatedInstances, change, deps.now())
      : false;
    const result = await removeInstanceEntries(deps.store, change, deps.config.ec2States);
    recordCount(METRIC.instanceEntriesRemoved, result.removed.length);
    const summary = {
      instanceId: change.instanceId,
      state: change.state,
      removed: result.removed.map(formatRef),
      kept: result.kept.map(formatRef),
      ignored: result.ignored,
    };
    logger.info('instance state change', { ...summary, rememberedTerminated: remembered });
    return summary;
  }

  return middy<Ec2StateChangeEvent, Ec2StateChangeSummary>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(errorsLoggedAndRethrown(logger))
    .handler(onStateChange);
}

export const handler = lazyHandler(createEc2StateChangeHandler, ec2StateChangeDependencies);
