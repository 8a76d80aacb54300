import type { EpochMillis } from '../domain/model.ts';

// The port lib/auth/terminated-instances.ts remembers gone instances through, beside it; the
// adapter (lib/store/dynamodb-terminated-instances.ts) implements it and keeps each record
// for TERMINATED_RECORD_TTL_MS.

/** What attestation and the EC2 state-change function need from storage. */
export interface TerminatedInstances {
  /** Records the instance as gone since `at`; a repeat keeps the first time. */
  recordTerminated(instanceId: string, at: EpochMillis): Promise<void>;
  /** When EC2 reported it gone; undefined when it did not (or the record expired). */
  terminatedAt(instanceId: string): Promise<EpochMillis | undefined>;
}
