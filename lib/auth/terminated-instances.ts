import { ForbiddenError } from '../domain/errors.ts';
import { type EpochMillis, toRfc3339, type VerifiedIdentity } from '../domain/model.ts';
import type { InstanceStateChange } from '../protocol/ec2-state-change.ts';
import { instanceIdOf } from './instance-identity.ts';
import type { TerminatedInstances } from './terminated-instance-store.ts';

/** States after which an instance never runs again (stopped ones may start). */
export const GONE_STATES: readonly string[] = ['shutting-down', 'terminated'];

/**
 * Remembers an instance EC2 reports shutting down or terminated, whatever states the
 * registrar removes entries for. Returns whether it recorded one.
 */
export async function rememberGoneInstance(
  instances: TerminatedInstances,
  change: InstanceStateChange,
  now: EpochMillis,
): Promise<boolean> {
  if (!GONE_STATES.includes(change.state)) return false;
  await instances.recordTerminated(change.instanceId, change.at ?? now);
  return true;
}

/**
 * IAM mode: refuses a connect from an instance EC2 reported gone (403 naming it). The
 * instance is the attested one (the document's, equal to the role session name), or the
 * session name when it is an instance id and no document came (attestation optional).
 */
export async function refuseGoneInstance(
  instances: TerminatedInstances,
  identity: VerifiedIdentity,
): Promise<void> {
  const instanceId = instanceIdOf(identity, {});
  if (instanceId === undefined) return;
  const at = await instances.terminatedAt(instanceId);
  if (at === undefined) return;
  throw new ForbiddenError(
    `instance ${instanceId} was reported terminated by EC2 at ${toRfc3339(at)}: its credentials and instance identity document no longer register a VM; a new instance registers with its own`,
  );
}
