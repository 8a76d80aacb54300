import type { EpochMillis } from '../domain/model.ts';

// The port lib/auth/terminated-instances.ts remembers gone instances through: below it, so the
// adapter (dynamodb-terminated-instances.ts) implements it without importing upward.

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

/** What attestation and the EC2 state-change function need from storage. */
export interface TerminatedInstances {
  /** Records the instance as gone since `at`; a repeat keeps the first time. */
  recordTerminated(instanceId: string, at: EpochMillis): Promise<void>;
  /** When EC2 reported it gone; undefined when it did not (or the record expired). */
  terminatedAt(instanceId: string): Promise<EpochMillis | undefined>;
}
