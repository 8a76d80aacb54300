import type { EpochMillis } from '../domain/model.ts';
import type { LivenessPolicy, SweepPolicy } from '../domain/sweep-policy.ts';

// The port the sweep run (lib/sweep/sweep-run.ts) records its policy through, and every client
// reads it from; lib/store/dynamodb-sweep-policy-store.ts implements it.

/**
 * The registrar's effective sweep policy, recorded in its own table so that every client (a
 * manual `registrar sweep`, `describe`) applies the policy the running registrar applies,
 * never its own defaults: a client with a 5 m default on a registrar configured with 1 h
 * would delete entries the registrar still keeps.
 */
export type EffectiveSweepPolicy = SweepPolicy &
  LivenessPolicy & {
    /**
     * How agents authenticate (token or iam), recorded beside the policy so the CLI can warn
     * an operator making join tokens for a registrar that never reads them.
     */
    authMode?: 'token' | 'iam';
  };

export interface RecordedSweepPolicy extends EffectiveSweepPolicy {
  /** When this policy was first recorded (the last change of configuration). */
  recordedAt: EpochMillis;
}

/** Where the effective sweep policy is recorded for every client to read. */
export interface SweepPolicyStore {
  /** The recorded policy; undefined before the registrar first ran. */
  read(): Promise<RecordedSweepPolicy | undefined>;
  /**
   * Records the policy when it differs from the stored one: one read per call, a write only
   * after a configuration change. Safe to repeat and to race: the write is conditional on the
   * values it replaces, so two writers of the same policy both end at 'unchanged' or
   * 'recorded', never an error.
   */
  record(policy: EffectiveSweepPolicy, now: EpochMillis): Promise<'recorded' | 'unchanged'>;
}
