import type { AgentGiven } from '../domain/agent-given.ts';
import type { EpochMillis, ObjectRef, WorkloadEntry } from '../domain/model.ts';
import type { EntryDeletion, StoredGroup } from '../domain/registry-records.ts';

/**
 * One group's rollout, as the rollout runs keep it (`ROLLOUT / <namespace>/<name>`): which
 * generation its entries are being brought to, how far the pass over them got (a cursor, so a
 * run that stops or dies resumes there), the current step of the pace, and an operator's pause.
 */
export interface RolloutRecord {
  group: ObjectRef;
  /** The generation being rolled out; undefined until a run first sees the group. */
  generation?: number;
  startedAt?: EpochMillis;
  /** The group's auto-registered entries when this generation's rollout started. */
  total: number;
  /** Entries written for this generation. */
  updated: number;
  /** The sort key of the last entry the pass handled; undefined: from the first. */
  cursor?: string;
  /** Passes over the group's entries for this generation (a pass that lost races is repeated). */
  pass: number;
  /** Entries a write of this pass gave up on (they kept changing); the next pass retries them. */
  skipped: number;
  stepStartedAt?: EpochMillis;
  stepUpdated: number;
  /** A pass found nothing left that it could update. */
  completedAt?: EpochMillis;
  /**
   * Entries of a release before rollouts that do not know which labels their agent gave: left
   * alone until their agent's next connect records it (API Gateway closes every connection
   * within 2 h), then updated by a later pass.
   */
  waiting: number;
  /** While some wait: when to pass over the group again. */
  recheckAt?: EpochMillis;
  /** `registrar rollout pause`: no entry is written until resume. */
  pausedAt?: EpochMillis;
  /**
   * Groups from the cluster: the group sync saw this group deleted there. The run removes it,
   * and the entries it auto-registered, as `registrar delete wg` does, if it still has this uid
   * and generation (one re-created or changed since is left alone).
   */
  removal?: GroupRemovalRequest;
  /** Bumped by every save of a run; a save conditional on it never overwrites another run's. */
  revision: number;
}

/** The group sync saw a group deleted in the cluster (see RolloutRecord.removal). */
export interface GroupRemovalRequest {
  uid: string;
  generation: number;
  requestedAt: EpochMillis;
  /**
   * Not before this time: the cluster listed no WorkloadGroup at all (the wrong context, a
   * selector that matches nothing, a cluster being restored), so the removal waits, and is
   * withdrawn if the groups come back meanwhile. Fail static: an empty answer must not empty
   * the mesh at once.
   */
  notBefore?: EpochMillis;
}

/** An entry as the rollout reads it: the object, what the agent gave, and its revision. */
export interface RolloutEntry {
  ref: ObjectRef;
  entry: WorkloadEntry;
  revision: number;
  groupGeneration?: number;
  agentGiven?: AgentGiven;
}

/** A page of a group's entries on an older generation, and where the next page starts. */
export interface OutdatedPage {
  entries: RolloutEntry[];
  /** undefined: the pass reached the group's last entry. */
  next?: string;
}

/** What the rollout runs, `registrar rollout` and the group sync need from storage. */
export interface RolloutStore {
  listRollouts(): Promise<RolloutRecord[]>;
  getRollout(group: ObjectRef): Promise<RolloutRecord | undefined>;
  /**
   * Saves a run's progress if the record is still at `record.revision` (then bumps it); never
   * touches the operator's pause or a removal request, which are written beside it. False when
   * another writer saved first.
   */
  saveRollout(record: RolloutRecord): Promise<boolean>;
  deleteRollout(group: ObjectRef): Promise<void>;
  /** `registrar rollout pause|resume`: creates the record when there is none. */
  setPaused(group: ObjectRef, pausedAt: EpochMillis | undefined): Promise<void>;
  /** Group sync (groups from the cluster): ask for, or withdraw, the group's removal. */
  requestRemoval(group: ObjectRef, removal: RolloutRecord['removal']): Promise<void>;
  /** One run at a time; a run that dies holds the lease no longer than `until`. */
  acquireLease(
    holder: string,
    now: EpochMillis,
    until: EpochMillis,
  ): Promise<{ acquired: true } | { acquired: false; holder: string; until: EpochMillis }>;
  releaseLease(holder: string): Promise<void>;

  /** Consistent: a run rolls out what the last apply wrote. */
  getGroup(group: ObjectRef): Promise<StoredGroup | undefined>;
  /**
   * The group's auto-registered entries whose generation is below `generation`, from `cursor`,
   * reading at most `limit` of the group's entries (before filtering).
   */
  outdatedEntries(
    group: ObjectRef,
    generation: number,
    cursor: string | undefined,
    limit: number,
  ): Promise<OutdatedPage>;
  /** Every auto-registered entry of the group, as the rollout reads them (status, counts). */
  groupEntries(group: ObjectRef): Promise<RolloutEntry[]>;
  /** Consistent re-read after a lost race; undefined when the entry is gone. */
  getRolloutEntry(ref: ObjectRef): Promise<RolloutEntry | undefined>;
  /**
   * One conditional write: the entry becomes `entry` at `generation`, if it is still at the
   * revision read and still the group's; it carries the entry's TemplateUpdated event. 'conflict': a connect, health report, drain or delete
   * got there first (re-read and try again, or leave it to the next pass).
   */
  rollOutEntry(
    read: RolloutEntry,
    group: string,
    entry: WorkloadEntry,
    generation: number,
    at: EpochMillis,
  ): Promise<'updated' | 'conflict'>;
  /**
   * Deletes an entry a removed group took along, and the records of the connections it listed
   * (IAM mode); its holders, read from the deleted item, or undefined when it was not there.
   */
  removeEntry(ref: ObjectRef, deletion: EntryDeletion): Promise<{ holders: string[] } | undefined>;
  /**
   * Deletes the group if it still has this uid and generation (a group re-created or changed
   * since is kept): 'deleted', 'changed', or 'gone' when it was not there.
   */
  deleteGroupIf(
    group: ObjectRef,
    expected: { uid: string; generation: number },
  ): Promise<'deleted' | 'changed' | 'gone'>;
}
