import type { TerminatedInstances } from '../auth/terminated-instance-store.ts';
import { rememberGoneInstance } from '../auth/terminated-instances.ts';
import { type EpochMillis, formatRef } from '../domain/model.ts';
import type { InstanceStateChange } from '../protocol/ec2-state-change.ts';
import type { InstanceStore } from './catalog-store.ts';
import { removeInstanceEntries } from './remove-instance-entries.ts';

/** What a state change needs: the registry, the states that remove entries, IAM mode's memory. */
export interface InstanceStateChangeDependencies {
  config: { ec2States: readonly string[] };
  store: InstanceStore;
  /** IAM mode: instances EC2 reported terminated; absent, none is remembered. */
  terminatedInstances?: TerminatedInstances;
  now: () => EpochMillis;
}

/** What one EC2 state change did, as the function returns it and `registrar ec2-event` prints. */
export interface Ec2StateChangeSummary {
  instanceId: string;
  state: string;
  removed: string[];
  kept: string[];
  ignored: boolean;
}

/**
 * Remembers a terminated instance (IAM mode; lib/auth/terminated-instances.ts), then removes the
 * instance's entries. The EC2 state-change function and `registrar ec2-event` both run it, so
 * the CLI drives the function's own decisions without importing the function.
 */
export async function applyInstanceStateChange(
  deps: InstanceStateChangeDependencies,
  change: InstanceStateChange,
): Promise<Ec2StateChangeSummary & { rememberedTerminated: boolean }> {
  // First: a connect signed with what the instance left behind is refused from now on, even if
  // the removal below fails and is retried.
  const rememberedTerminated = deps.terminatedInstances
    ? await rememberGoneInstance(deps.terminatedInstances, change, deps.now())
    : false;
  const result = await removeInstanceEntries(deps.store, change, deps.config.ec2States);
  return {
    instanceId: change.instanceId,
    state: change.state,
    removed: result.removed.map(formatRef),
    kept: result.kept.map(formatRef),
    ignored: result.ignored,
    rememberedTerminated,
  };
}
