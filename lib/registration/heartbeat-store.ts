import type { EntryRecord } from '../domain/entry-record.ts';
import type { Heartbeat } from '../domain/heartbeat.ts';
import type { GroupSamples, LanePlanRecord } from '../domain/heartbeat-lanes.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';

// The ports of the sweeper's heartbeat checks: the heartbeat groups and the lanes' records.

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
