import type { AgentGiven } from '../domain/agent-given.ts';
import type { DepartureKind } from '../domain/disruption.ts';
import type { EntryEvent } from '../domain/entry-events.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { HolderBeat } from '../domain/holder-heartbeat.ts';
import type { EpochMillis, ObjectRef, VerifiedIdentity, WorkloadEntry } from '../domain/model.ts';
import type { HolderRef, StoredGroup } from '../domain/registry-records.ts';

// The ports of the event path (connect, disconnect, messages): an entry's lifecycle, its
// address claim, its holders' heartbeats, IAM mode's connection records.

/** One connect, as the connect rule decided it: the entry to create if none exists yet. */
export interface ConnectChange {
  /** The entry built from the group template; used only when no entry exists yet. */
  entry: WorkloadEntry;
  autoRegistrationGroup: string;
  /** What the name was made from (entryOrigin): another origin with the same name collides. */
  origin: string;
  healthChecksEnabled: boolean;
  groupGeneration: number;
  /**
   * What the agent gave (labels, locality): recorded when the entry has none yet (its first
   * connect, or the first connect of this release to an older entry), never changed after, so
   * a template rollout rebuilds the entry with the agent's values winning as at registration.
   */
  agentGiven?: AgentGiven;
  connectionId: string;
  /** Server time of the connect (API Gateway's `connectedAt`). */
  connectedAt: EpochMillis;
  controller: string;
  identity: VerifiedIdentity;
  /**
   * The agent's version as the connect says it (`0.1.x` for an agent that sends none),
   * recorded beside the identity by the newest connect. The agent's word: shown, never trusted.
   */
  agentVersion?: string;
  /**
   * The heartbeat this connection is told (its `describe` names it) and held to, recorded on
   * the holder by the same write (lib/domain/holder-heartbeat.ts). Absent: none recorded (a
   * caller of an older shape); the sweeper then applies the rule of 0.2.
   */
  heartbeat?: HolderBeat;
  /**
   * Whether this caller may create the entry (the group template's service account). When
   * not, it may still join an existing entry it may control (rule 6); otherwise 'forbidden'.
   */
  mayCreate: boolean;
  /**
   * Write the connection -> entry record before the entry: the connection does not carry its
   * entry in the authorizer context (IAM mode has no Lambda authorizer), so `$disconnect` and
   * messages find it through the record. Written first, so no holder exists without a record.
   */
  recordConnection: boolean;
  /**
   * The EC2 instance this connect comes from, from a source the registrar trusts (IAM mode:
   * the instance profile's session name; token mode: the agent's IMDS label, which can only
   * speed up the removal of the entry that claims it). Absent: unknown.
   */
  instanceId?: string;
}

export type ConnectOutcome =
  /** No entry existed; it was created from the template, held by this connection. */
  | 'created'
  /** The entry existed; this connection holds it and is its newest connect. */
  | 'reconnected'
  /**
   * The entry is held by a newer connect already (events processed out of order): this
   * connection holds it too, and the recorded connect time stays the newer one.
   */
  | 'joined'
  /** An entry with that name exists and was made by hand: never overwritten (rule 7). */
  | 'conflict'
  /** The name belongs to another (group, address, network): never merged (rule 4). */
  | 'collision'
  /** The caller may not control the existing entry (its service account; rule 6). */
  | 'forbidden'
  /** This connection's `$disconnect` was processed first: it holds nothing (rule 8). */
  | 'departed';

export interface LeaveChange extends HolderRef {
  /** Server time of the disconnect event. */
  at: EpochMillis;
  /**
   * The agent said it closed this connection because a newer one replaced it (make before
   * break). Only a hint for the order of the conditional writes, never for the outcome: it
   * comes from the client, so a wrong hint costs one extra write and changes nothing else.
   */
  replaced?: boolean;
  /** How the connection closed (its close code); absent: abnormal, the cautious reading. */
  departure?: DepartureKind;
  /**
   * When the leaving connection connected (API Gateway's `connectedAt`). With it, a clean
   * close leaves its mark for holders left over from lost `$disconnect`s, and a late abnormal
   * one of such a holder is read as the clean departure it follows (see CleanExitGuard).
   */
  since?: EpochMillis;
}

/** A connection holding an entry, and when it connected (absent in records of old entries). */
export interface Holder {
  connectionId: string;
  since: EpochMillis | undefined;
}

export type LeaveResult =
  /** This was the last holder: the entry is marked disconnected. */
  | { outcome: 'disconnected' }
  /** Other connections still hold the entry; they are listed for a liveness check. */
  | { outcome: 'still-held'; holders: Holder[] }
  /**
   * The connection holds nothing: a repeated or late `$disconnect`, or one that overtook its
   * own `$connect` (a tombstone now refuses that connect), or the entry is gone.
   */
  | { outcome: 'not-holder' };

export interface HealthReport extends HolderRef {
  healthy: boolean;
  message?: string;
  /** When the report was received. */
  at: EpochMillis;
}

export type HealthOutcome =
  /** The `Healthy` status changed. */
  | 'transitioned'
  /** Same status; `lastProbeTime` (and message) refreshed. */
  | 'refreshed'
  /** A newer report is stored already (reports of one VM can land out of order). */
  | 'superseded'
  /** The connection holds no entry: the agent must reconnect to register. */
  | 'not-holder';

/** The entry a connection registered, for connections that do not carry it (IAM mode). */
export interface ConnectionRecord extends HolderRef {
  connectedAt: EpochMillis;
}

/** An entry's claim of its address within its network (DESIGN: an address is unique). */
export interface AddressClaim {
  address: string;
  /** '' when the entry has no network. */
  network: string;
  entry: ObjectRef;
  /** The EC2 instance AWS signed the address for (IAM mode with attestation). */
  instanceId?: string;
  /** Server time of the connect. */
  at: EpochMillis;
}

export type ClaimResult =
  | { outcome: 'claimed' }
  /** Another entry holds the address (`instanceId`: the attested instance that claimed it). */
  | { outcome: 'held'; holder: ObjectRef; instanceId?: string };

/** The event path's conditional writes on an entry and its holders (DynamoDbEntryLifecycle). */
export interface EntryLifecycleStore {
  /** Consistent: `registrar apply` and `delete wg` are read-your-writes for connects. */
  getGroup(ref: ObjectRef): Promise<StoredGroup | undefined>;
  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined>;
  connect(change: ConnectChange): Promise<ConnectOutcome>;
  /**
   * Takes back an entry this connect just created, when its group was deleted meanwhile
   * (`delete wg` cascades; an entry created after the cascade read would outlive its group).
   */
  withdrawCreated(ref: ObjectRef, origin: string): Promise<void>;
  /**
   * Records on the holder that a claim of its address was refused (`registrar describe we`
   * shows it as an AddressInUse event), unless one was recorded less than `intervalMs` before
   * the claim: one conditional write, so a burst of claims lands at most one. Kept in a slot
   * of its own, apart from the events the entry's own lifecycle records. Not a change of the
   * entry's state: no revision bump, so no sweep or connect loses to it. True when it landed.
   */
  noteAddressConflict(holder: ObjectRef, claim: AddressClaim, intervalMs: number): Promise<boolean>;
  /** The connection stops holding its entry (its `$disconnect`). */
  leave(change: LeaveChange): Promise<LeaveResult>;
  /**
   * Drops holders a liveness check proved gone (API Gateway answered 410), or found silent
   * past their heartbeat (`silent`: the event says Silent and why). Marks the entry
   * disconnected at `at` when no holder is left. Only holders still listed are dropped.
   */
  dropHolders(
    entry: ObjectRef,
    gone: readonly string[],
    at: EpochMillis,
    silent?: { why: string },
  ): Promise<'disconnected' | 'still-held' | 'unchanged'>;
  reportHealth(report: HealthReport): Promise<HealthOutcome>;
  /**
   * The holder says its VM is shutting down: Healthy False, reason Draining, until a new
   * connect. 'not-holder': the connection holds nothing (the agent reconnects or just leaves).
   */
  drain(holder: HolderRef, at: EpochMillis): Promise<'draining' | 'not-holder'>;
}

/** An address's claim item, apart from its entry (DynamoDbAddressClaims). */
export interface AddressClaimItemStore {
  /**
   * Claims the address for the entry: taken when free, expired, or the entry's own; else who
   * holds it. One conditional write; a read only when it is held.
   */
  claimAddress(claim: AddressClaim): Promise<ClaimResult>;
  /** Takes the claim from an entry being replaced; false when the claim changed meanwhile. */
  takeAddress(claim: AddressClaim, from: ObjectRef): Promise<boolean>;
}

/** The heartbeat a holder acknowledged (DynamoDbHolderBeats). */
export interface HolderBeatStore {
  /**
   * Records the heartbeat a holder acknowledged (lib/registration/acknowledge-heartbeat.ts),
   * with its event: one conditional write, only while the connection holds the entry.
   */
  recordHeartbeat(
    holder: HolderRef,
    beat: HolderBeat,
    event: EntryEvent,
  ): Promise<'recorded' | 'not-holder'>;
}

/** IAM mode's connection -> entry records (DynamoDbConnectionRecords). */
export interface ConnectionRecordStore {
  getConnection(connectionId: string): Promise<ConnectionRecord | undefined>;
  forgetConnection(connectionId: string): Promise<void>;
}
