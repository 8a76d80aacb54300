import { ForbiddenError } from '../domain/errors.ts';
import { type EpochMillis, toRfc3339, type VerifiedIdentity } from '../domain/model.ts';
import type { InstanceStateChange } from '../protocol/ec2-state-change.ts';
import { instanceIdOf } from '../registration/instance-identity.ts';

/**
 * Instances EC2 reported gone, remembered so that what they leave behind cannot register them
 * again. The instance identity document never expires, and the credentials EC2 handed the
 * instance stay valid after it terminated until they expire: whoever copied both (a backup of
 * the disk, a process that read IMDS) could otherwise sign a connect as the instance, with
 * its genuine document, and register its address.
 *
 * How long: the role credentials EC2 delivers to an instance are temporary STS role-session
 * credentials; EC2 rotates them and offers new ones at least 5 minutes before the old expire
 * (EC2 User Guide, "Retrieve security credentials from instance metadata"); they are seen to
 * last about 6 h, and no role session lasts longer than 12 h (a role's maximum session
 * duration). A record lives 24 h, twice the longest: the last credentials of a terminated
 * instance expire while its record still refuses them, and API Gateway refuses a request
 * signed with expired credentials from then on. Instance ids are never reused, so a record
 * that DynamoDB's TTL deletes late (it may take days) refuses nobody else.
 */
export const TERMINATED_RECORD_TTL_MS = 24 * 3_600_000;

/** States after which an instance never runs again (stopped ones may start). */
export const GONE_STATES: readonly string[] = ['shutting-down', 'terminated'];

/** What attestation and the EC2 state-change function need from storage. */
export interface TerminatedInstances {
  /** Records the instance as gone since `at`; a repeat keeps the first time. */
  recordTerminated(instanceId: string, at: EpochMillis): Promise<void>;
  /** When EC2 reported it gone; undefined when it did not (or the record expired). */
  terminatedAt(instanceId: string): Promise<EpochMillis | undefined>;
}

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
