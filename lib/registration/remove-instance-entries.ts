import type { ObjectRef } from '../domain/model.ts';
import type { InstanceStateChange } from '../protocol/ec2-state-change.ts';
import type { InstanceStore } from './catalog-store.ts';

export interface InstanceRemoval {
  /** Entries deleted now. */
  removed: ObjectRef[];
  /** Entries that named the instance but were taken over by a newer connect since. */
  kept: ObjectRef[];
  /** The state is not one the registrar acts on (the rule's pattern lets only these through). */
  ignored: boolean;
}

/**
 * EC2 knows first: an instance shutting down or terminated will not come back, so its entries
 * go now, without the grace period and whatever the sweeper's fail-static mode (a deliberate
 * departure is never held). Each delete is conditional on the entry still naming the
 * instance, so an address reused by a newer instance keeps its entry. In token mode the
 * instance id came from the agent's own label: believing it can only remove the entry that
 * claimed it.
 */
export async function removeInstanceEntries(
  store: InstanceStore,
  change: InstanceStateChange,
  states: readonly string[],
): Promise<InstanceRemoval> {
  const result: InstanceRemoval = { removed: [], kept: [], ignored: false };
  if (!states.includes(change.state)) return { ...result, ignored: true };
  for (const ref of await store.entriesOfInstance(change.instanceId)) {
    const outcome = await store.removeInstanceEntry(ref, change.instanceId, change.at);
    (outcome === 'deleted' ? result.removed : result.kept).push(ref);
  }
  return result;
}
