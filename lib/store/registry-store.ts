import type { AgentGiven } from '../domain/agent-given.ts';
import type { DepartureKind, DisruptionRecord, ZoneCount } from '../domain/disruption.ts';
import type { DeletionCause, EntryEvent } from '../domain/entry-events.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { Heartbeat } from '../domain/heartbeat.ts';
import type { GroupSamples, LanePlanRecord } from '../domain/heartbeat-lanes.ts';
import type { HolderBeat } from '../domain/holder-heartbeat.ts';
import type {
  EpochMillis,
  ObjectRef,
  VerifiedIdentity,
  WorkloadEntry,
  WorkloadGroup,
} from '../domain/model.ts';
import type { LivenessWindow, SweepCutoffs } from '../domain/sweep-policy.ts';

/** A WorkloadGroup as stored: the Istio object, with `metadata.uid` and `metadata.generation`. */
export interface StoredGroup {
  group: WorkloadGroup;
  /** Bumped whenever `apply` changes the group's spec. */
  generation: number;
}

/** When and why an entry is deleted: kept with its events in a history item. */
export interface EntryDeletion {
  at: EpochMillis;
  /** Absent: read from the entry (the sweeper's rule that made it due). */
  cause?: DeletionCause;
  /** Added to the event's message: how fail static paced it, say. */
  note?: string;
}

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

/** Where a connection's entry is: carried by the connection, or looked up by its record. */
export interface HolderRef {
  connectionId: string;
  entry: ObjectRef;
}

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

/**
 * What registration, health and the sweeper need from storage, and nothing more.
 * Every state change is one conditional write; losing a race is an outcome, not an error.
 */
/** Who runs the sweep now: the holder's id and until when (its invocation's deadline). */
export type SweepLease =
  | { acquired: true }
  | { acquired: false; holder: string; until: EpochMillis };

/**
 * One sweep at a time, without reserved concurrency: a run takes the lease until its own
 * deadline; a run that starts while another holds it (a late tick) does nothing. A run that
 * crashes holds it no longer than its deadline.
 */
export interface SweepLeaseStore {
  /**
   * `lane` 0 (the default) is the sweep's lease; a heartbeat lane 1..n-1 has one of its own,
   * so two invocations of one lane never overlap and no lane ever blocks the sweep.
   */
  acquireSweepLease(
    holder: string,
    now: EpochMillis,
    until: EpochMillis,
    lane?: number,
  ): Promise<SweepLease>;
  /** Lets the next run start at once; a lease taken over by another holder is left alone. */
  releaseSweepLease(holder: string, lane?: number): Promise<void>;
}

export interface RegistryStore extends DisruptionStore, InstanceStore, SweepLeaseStore {
  /** Consistent: `registrar apply` and `delete wg` are read-your-writes for connects. */
  getGroup(ref: ObjectRef): Promise<StoredGroup | undefined>;
  connect(change: ConnectChange): Promise<ConnectOutcome>;
  /**
   * Takes back an entry this connect just created, when its group was deleted meanwhile
   * (`delete wg` cascades; an entry created after the cascade read would outlive its group).
   */
  withdrawCreated(ref: ObjectRef, origin: string): Promise<void>;
  /**
   * Claims the address for the entry: taken when free, expired, or the entry's own; else who
   * holds it. One conditional write; a read only when it is held.
   */
  claimAddress(claim: AddressClaim): Promise<ClaimResult>;
  /** Takes the claim from an entry being replaced; false when the claim changed meanwhile. */
  takeAddress(claim: AddressClaim, from: ObjectRef): Promise<boolean>;
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
   * Records the heartbeat a holder acknowledged (lib/registration/acknowledge-heartbeat.ts),
   * with its event: one conditional write, only while the connection holds the entry.
   */
  recordHeartbeat(
    holder: HolderRef,
    beat: HolderBeat,
    event: EntryEvent,
  ): Promise<'recorded' | 'not-holder'>;
  getConnection(connectionId: string): Promise<ConnectionRecord | undefined>;
  forgetConnection(connectionId: string): Promise<void>;
  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined>;
  /**
   * Entries that may be due, read from the sweep index keys every namespace shares (never a
   * table scan), in the order of `states`: `L` left cleanly and `D` left abnormally as release
   * 0.1.0 keyed them (read until none is left), `C` still marked connected (stale). Default
   * all three. Each namespace's own departures: departuresOf.
   *
   * With `onReadFailure`, a read that fails (after the SDK's retries) skips the rest of its
   * index shard and the others are still read: one throttled page does not hide every other
   * candidate. Without it, the failure is thrown.
   */
  sweepCandidates(
    cutoffs: SweepCutoffs,
    limit: number,
    states?: readonly SweepIndexState[],
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord>;
  /**
   * The namespaces whose departures the sweeper reads: the namespace index (one Query) and the
   * namespaces of the fail-static cell counters (read unless given: the sweeper's fail-static
   * guard reads them anyway).
   */
  sweepNamespaces(counted?: readonly ZoneCount[]): Promise<string[]>;
  /**
   * One namespace's departures of one kind (`L` left cleanly, `D` left abnormally)
   * disconnected at or before the cutoff, oldest first, read a page at a time from its own
   * sweep index keys: another namespace's backlog is never read before them. With
   * `onReadFailure`, a shard whose read fails ends there and the others are still read.
   */
  departuresOf(
    namespace: string,
    kind: DepartureKey,
    disconnectedAtOrBefore: EpochMillis,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord>;
  /**
   * Departed entries still within their grace period (disconnected after the cutoff), counted
   * from the sweep index up to `limit`, and the earliest disconnect among them: what a sweep
   * leaves for later (`registrar sweep` says so).
   */
  departuresInGrace(disconnectedAfter: EpochMillis, limit: number): Promise<DeparturesInGrace>;
  /**
   * A rollback to release 0.1.0: moves every namespace's departures back to the shared keys
   * 0.1.0's sweeper reads (`L#<shard>`, `D#<shard>`). Idempotent and resumable; at most `limit`
   * moves, `more` when some may be left.
   */
  moveDeparturesToSharedKeys(limit?: number): Promise<{ moved: number; more: boolean }>;
  /** Connected entries whose newest connect falls in one of the windows (liveness checks). */
  connectedIn(
    windows: readonly LivenessWindow[],
    limit: number,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord>;
  /** Up to when the sweeper's liveness checks have covered time; undefined before the first. */
  livenessMark(): Promise<EpochMillis | undefined>;
  setLivenessMark(at: EpochMillis): Promise<void>;
  /**
   * Deletes a swept entry if it is still at the revision the sweeper read. A reconnect that
   * landed in between wins: 'conflict'. Safe to retry: an entry already gone is 'deleted'.
   */
  deleteSwept(record: EntryRecord, deletion?: EntryDeletion): Promise<'deleted' | 'conflict'>;
  /**
   * The holder says its VM is shutting down: Healthy False, reason Draining, until a new
   * connect. 'not-holder': the connection holds nothing (the agent reconnects or just leaves).
   */
  drain(holder: HolderRef, at: EpochMillis): Promise<'draining' | 'not-holder'>;
}

/** The sweep index's states: connected (C), left abnormally (D), left cleanly (L). */
export type SweepIndexState = 'C' | 'D' | 'L';

/** How a departed entry is keyed in the sweep index: left cleanly (L) or abnormally (D). */
export type DepartureKey = 'D' | 'L';

/** The entries away after an abnormal departure, counted from the sweep index. */
/** See RegistryStore.departuresInGrace; `more` when `limit` was reached. */
export interface DeparturesInGrace {
  count: number;
  more: boolean;
  firstDisconnectedAt?: EpochMillis;
}

export interface AwayCount {
  /** By cell (`<namespace>#<zone>`), for the namespaces counted. */
  byCell: Record<string, number>;
  /** The namespaces whose keys were counted in full: only their cells are known. */
  namespaces: ReadonlySet<string>;
}

/** What the sweeper's fail-static guard reads and keeps (lib/domain/disruption.ts). */
export interface DisruptionStore {
  /** One counter item per zone: one query of one partition, O(zones). */
  zoneCounts(): Promise<ZoneCount[]>;
  /**
   * The entries away after an abnormal departure, counted by cell from the sweep index itself
   * (its `D` keys: reads proportional to those entries, never the table): 0.1.0's shared keys
   * and the given namespaces' own, at most `limit` items in all; a namespace that would take
   * the count past it is left uncounted, and undefined when the shared keys alone hold more.
   * The counters can drift (a write that failed for good after its entry's); this cannot.
   */
  awayByZone(limit: number, namespaces?: readonly string[]): Promise<AwayCount | undefined>;
  /** The newest connect anywhere, from the head of each connected shard of the sweep index. */
  newestConnectAt(): Promise<EpochMillis | undefined>;
  disruptionRecord(): Promise<DisruptionRecord | undefined>;
  saveDisruptionRecord(record: DisruptionRecord): Promise<void>;
  /**
   * `registrar sweep --force`: releases a hold (or a slowdown) until the disruption ends.
   * 'normal': there was none to release.
   */
  releaseHold(at: EpochMillis): Promise<'released' | 'normal'>;
}

/** What the EC2 state-change function needs: the instance's entries, and their removal. */
export interface InstanceStore {
  /** Entries whose newest connect named this instance (the sparse `instance` index). */
  entriesOfInstance(instanceId: string): Promise<ObjectRef[]>;
  /** Deletes the entry if it still names the instance; 'kept' when a newer connect replaced it. */
  removeInstanceEntry(
    ref: ObjectRef,
    instanceId: string,
    at?: EpochMillis,
  ): Promise<'deleted' | 'kept'>;
}

/** The namespaces that hold groups or entries, from the namespace index (never a Scan). */
export interface NamespaceList {
  namespaces: string[];
  /**
   * False on a table written before the index existed, until its one-time backfill (the first
   * `registrar get -A` by an operator): namespaces may then be missing from `namespaces`.
   */
  complete: boolean;
}

/** What the operator CLI needs: groups and entries as documents. */
export interface CatalogStore {
  /** One Query of the namespace index: the projector's full reconcile reads namespaces so. */
  listNamespaces(): Promise<NamespaceList>;
  /** Creates or updates a group; `generation` goes up only when its spec changes. */
  applyGroup(
    group: WorkloadGroup,
  ): Promise<{ outcome: 'created' | 'updated' | 'unchanged'; group: WorkloadGroup }>;
  listGroups(namespace?: string): Promise<StoredGroup[]>;
  deleteGroup(ref: ObjectRef): Promise<boolean>;
  /** Creates or updates a hand-made entry; refuses ('conflict') to overwrite an auto-registered one. */
  applyEntry(entry: WorkloadEntry): Promise<'created' | 'updated' | 'unchanged' | 'conflict'>;
  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined>;
  /** One namespace: a Query. All: the namespace index, then a Query per namespace. */
  listEntries(namespace?: string): Promise<EntryRecord[]>;
  deleteEntry(ref: ObjectRef): Promise<boolean>;
  /** Deletes an entry; the connections that held it when it went, undefined when it was not there. */
  removeEntry(ref: ObjectRef, deletion?: EntryDeletion): Promise<{ holders: string[] } | undefined>;
}

/**
 * The sweeper's record of the groups that set a heartbeat (`<namespace>/<name>` as key): the
 * setting and since when the sweeper applies it (a holder connected before then keeps the
 * default: it may not have been told), and when the groups were last listed.
 */
export interface HeartbeatGroups {
  listedAt: EpochMillis;
  groups: Record<
    string,
    { intervalMs: number; misses: number; since: EpochMillis; dropped?: EpochMillis }
  >;
  /** The count of heartbeat changes (heartbeatChanges) this listing saw. */
  changes?: number;
}

/** What the sweeper's heartbeat lane needs from storage: the groups, and the lanes' records. */
export type HeartbeatStore = HeartbeatGroupStore & HeartbeatLaneStore;

/** The heartbeat groups, their holders and their namespaces' quotas (DynamoDbHeartbeatGroups). */
export interface HeartbeatGroupStore {
  heartbeatGroups(): Promise<HeartbeatGroups | undefined>;
  saveHeartbeatGroups(state: HeartbeatGroups): Promise<void>;
  /** Every group whose annotations set a heartbeat (listed once per liveness interval). */
  groupHeartbeats(): Promise<{ group: ObjectRef; heartbeat: Heartbeat }[]>;
  /**
   * How many times a group's heartbeat annotations changed (`apply` and the group sync count
   * each: one small item): the sweeper lists the groups again when it went up.
   */
  heartbeatChanges(): Promise<number>;
  /**
   * The heartbeat checks a minute each namespace's settings allow (`registrar namespace set
   * --heartbeat-checks`); a namespace without one is absent (the default applies).
   */
  heartbeatQuotas(namespaces: readonly string[]): Promise<Record<string, number>>;
  /**
   * The group's auto-registered entries that still have a holder, by name; with `range`, only
   * those named after `after` and/or at most `upTo` (a lane resuming where it stopped).
   */
  heldEntriesOf(group: ObjectRef, range?: NameRange): AsyncIterable<EntryRecord>;
}

/** The heartbeat lanes' records and their plan (DynamoDbHeartbeatLanes). */
export interface HeartbeatLaneStore {
  /** A heartbeat lane's own record: where its pass stopped, its samples (one small item). */
  heartbeatLane(lane: number): Promise<HeartbeatLaneState | undefined>;
  saveHeartbeatLane(lane: number, state: HeartbeatLaneState): Promise<void>;
  /** Every lane's record (one Query): lane 0 plans from their samples. */
  heartbeatLanes(): Promise<Map<number, HeartbeatLaneState>>;
  /** How the heartbeat groups' entries are shared among the lanes (lib/domain/heartbeat-lanes.ts). */
  heartbeatPlan(): Promise<LanePlanRecord | undefined>;
  saveHeartbeatPlan(record: LanePlanRecord): Promise<void>;
}

/**
 * A heartbeat lane's state, under one plan version: where each namespace's share of its cut
 * pass stopped, whether it finished a pass over its whole share under that plan, the names it
 * sampled (by group), and when the pass now going began (for the pass's duration).
 */
export interface HeartbeatLaneState {
  planVersion: number;
  cursors: HeartbeatCursors;
  complete: boolean;
  samples: GroupSamples;
  passStartedAt?: EpochMillis;
  /** When the lane last ran (written every run: lane 0 names the lanes that stopped running). */
  ranAt?: EpochMillis;
  /**
   * How many names each of its samples stands for (SAMPLE_EVERY, doubled each time its item
   * would pass MAX_LANE_SAMPLES: lib/domain/heartbeat-lanes.ts). Absent: SAMPLE_EVERY.
   */
  sampleEvery?: number;
  /**
   * By group (`<namespace>/<name>`): what the lane's last whole read of its share of the group
   * saw (lib/registration/heartbeat-schedule.ts): the group's pace and its namespace's quota
   * are set from it at the next run's start.
   */
  held?: Record<string, HeldObservation>;
}

/** One group's held entries as a pass read them, and the shortest bound a holder was held to. */
export interface HeldObservation {
  held: number;
  shortestMs?: number;
}

/** Entry names after `after` (exclusive) and at most `upTo` (inclusive), in name order. */
export interface NameRange {
  after?: string;
  upTo?: string;
}

/**
 * By namespace: the group (its name) and the last entry name its share of a cut pass had
 * checked. A namespace whose share of the pass was done has none.
 */
export type HeartbeatCursors = Record<string, { group: string; after: string }>;

/*
 * The ports the adapters of this folder implement, one each (`implements`), so a call a use
 * case names and no adapter serves fails to compile. RegistryStore, CatalogStore,
 * HeartbeatStore, CordonStore and EntryEventStore are the use cases' view: their sum is what
 * lib/wiring composes from these adapters (composeAdapters), never a class that forwards.
 */

/** DynamoDbAddressClaims: an address's claim item, apart from its entry. */
export type AddressClaimItemStore = Pick<RegistryStore, 'claimAddress' | 'takeAddress'>;

/** DynamoDbConnectionRecords: IAM mode's connection -> entry records. */
export type ConnectionRecordStore = Pick<RegistryStore, 'getConnection' | 'forgetConnection'>;

/** DynamoDbEntryLifecycle: the event path's conditional writes on an entry and its holders. */
export type EntryLifecycleStore = Pick<
  RegistryStore,
  | 'getGroup'
  | 'getEntry'
  | 'connect'
  | 'withdrawCreated'
  | 'leave'
  | 'dropHolders'
  | 'reportHealth'
  | 'drain'
  | 'noteAddressConflict'
>;

/** DynamoDbSweepIndex: the keys every namespace shares, and the sweeper's deletion. */
export type SweepIndexStore = Pick<
  RegistryStore,
  'sweepCandidates' | 'connectedIn' | 'deleteSwept' | 'newestConnectAt'
>;

/** DynamoDbDepartureQueues: each namespace's departures, and the recount of those away. */
export type DepartureStore = Pick<
  RegistryStore,
  | 'sweepNamespaces'
  | 'departuresOf'
  | 'departuresInGrace'
  | 'moveDeparturesToSharedKeys'
  | 'awayByZone'
>;

/** DynamoDbSweeperState: the sweep's lease, its liveness mark and fail static's record. */
export type SweeperStateStore = Pick<
  RegistryStore,
  | 'acquireSweepLease'
  | 'releaseSweepLease'
  | 'livenessMark'
  | 'setLivenessMark'
  | 'disruptionRecord'
  | 'saveDisruptionRecord'
  | 'releaseHold'
>;

/** DynamoDbCellCounters, as the fail-static guard reads them. */
export type ZoneCountStore = Pick<DisruptionStore, 'zoneCounts'>;

/** DynamoDbHolderBeats: the heartbeat a holder acknowledged. */
export type HolderBeatStore = Pick<RegistryStore, 'recordHeartbeat'>;

/** DynamoDbCatalog: the operators' documents (an entry is read by the lifecycle's getEntry). */
export type CatalogDocumentStore = Omit<CatalogStore, 'getEntry'>;
