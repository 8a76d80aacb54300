import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DisruptionRecord, ZoneCount } from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { Heartbeat } from '../domain/heartbeat.ts';
import type { LanePlanRecord } from '../domain/heartbeat-lanes.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { LivenessWindow, SweepCutoffs } from '../domain/sweep-policy.ts';
import type { SweepStore } from '../registration/sweep-options.ts';
import { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { DynamoDbConnectionRecords } from './dynamodb-connection-records.ts';
import { DynamoDbDepartureQueues } from './dynamodb-departure-queues.ts';
import { DynamoDbEntryHistory, type HistoryLost } from './dynamodb-entry-history.ts';
import { DynamoDbEntryLifecycle } from './dynamodb-entry-lifecycle.ts';
import { DynamoDbHeartbeatGroups } from './dynamodb-heartbeat-groups.ts';
import { DynamoDbHeartbeatLanes } from './dynamodb-heartbeat-lanes.ts';
import { DynamoDbSweepIndex } from './dynamodb-sweep-index.ts';
import { DynamoDbSweeperState } from './dynamodb-sweeper-state.ts';
import { RegistryTable } from './dynamodb-table.ts';
import type {
  AwayCount,
  DepartureKey,
  DisruptionStore,
  EntryDeletion,
  HeartbeatGroups,
  HeartbeatLaneState,
  NameRange,
  SweepIndexState,
  SweepLease,
  SweepLeaseStore,
} from './registry-store.ts';

/** What the sweeper function asks of the registry: the sweep (with fail static), its lease. */
export type SweeperStore = SweepStore & DisruptionStore & SweepLeaseStore;

/**
 * The registry as the sweeper function uses it: the adapters DynamoDbRegistryStore composes
 * for these calls and none of the others (catalog, cordon, instance index, address claims),
 * so the sweeper's bundle carries only these (issue 27).
 */
export class DynamoDbSweeperStore implements SweeperStore {
  readonly #entries: DynamoDbEntryLifecycle;
  readonly #sweepIndex: DynamoDbSweepIndex;
  readonly #departures: DynamoDbDepartureQueues;
  readonly #sweeper: DynamoDbSweeperState;
  readonly #heartbeats: DynamoDbHeartbeatGroups;
  readonly #lanes: DynamoDbHeartbeatLanes;
  readonly #counters: DynamoDbCellCounters;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: { onHistoryLost?: HistoryLost } = {},
  ) {
    const table = new RegistryTable(client, tableName);
    const history = new DynamoDbEntryHistory(client, tableName, options.onHistoryLost);
    this.#counters = new DynamoDbCellCounters(table);
    this.#entries = new DynamoDbEntryLifecycle(
      table,
      this.#counters,
      new DynamoDbConnectionRecords(table),
    );
    this.#sweepIndex = new DynamoDbSweepIndex(table, this.#counters, history);
    this.#departures = new DynamoDbDepartureQueues(table, this.#counters);
    this.#sweeper = new DynamoDbSweeperState(table);
    this.#heartbeats = new DynamoDbHeartbeatGroups(table);
    this.#lanes = new DynamoDbHeartbeatLanes(table);
  }

  sweepCandidates(
    cutoffs: SweepCutoffs,
    limit: number,
    states?: readonly SweepIndexState[],
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord> {
    return this.#sweepIndex.sweepCandidates(cutoffs, limit, states, onReadFailure);
  }
  connectedIn(
    windows: readonly LivenessWindow[],
    limit: number,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord> {
    return this.#sweepIndex.connectedIn(windows, limit, onReadFailure);
  }
  deleteSwept(record: EntryRecord, deletion?: EntryDeletion): Promise<'deleted' | 'conflict'> {
    return this.#sweepIndex.deleteSwept(record, deletion);
  }
  sweepNamespaces(counted?: readonly ZoneCount[]): Promise<string[]> {
    return this.#departures.sweepNamespaces(counted);
  }
  departuresOf(
    namespace: string,
    kind: DepartureKey,
    disconnectedAtOrBefore: EpochMillis,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord> {
    return this.#departures.departuresOf(namespace, kind, disconnectedAtOrBefore, onReadFailure);
  }
  awayByZone(limit: number, namespaces?: readonly string[]): Promise<AwayCount | undefined> {
    return this.#departures.awayByZone(limit, namespaces);
  }
  newestConnectAt(): Promise<EpochMillis | undefined> {
    return this.#sweepIndex.newestConnectAt();
  }
  dropHolders(
    entry: ObjectRef,
    gone: readonly string[],
    at: EpochMillis,
    silent?: { why: string },
  ): Promise<'disconnected' | 'still-held' | 'unchanged'> {
    return this.#entries.dropHolders(entry, gone, at, silent);
  }
  heartbeatGroups(): Promise<HeartbeatGroups | undefined> {
    return this.#heartbeats.heartbeatGroups();
  }
  saveHeartbeatGroups(state: HeartbeatGroups): Promise<void> {
    return this.#heartbeats.saveHeartbeatGroups(state);
  }
  groupHeartbeats(): Promise<{ group: ObjectRef; heartbeat: Heartbeat }[]> {
    return this.#heartbeats.groupHeartbeats();
  }
  heartbeatChanges(): Promise<number> {
    return this.#heartbeats.heartbeatChanges();
  }
  heartbeatQuotas(namespaces: readonly string[]): Promise<Record<string, number>> {
    return this.#heartbeats.heartbeatQuotas(namespaces);
  }
  heldEntriesOf(group: ObjectRef, range?: NameRange): AsyncIterable<EntryRecord> {
    return this.#heartbeats.heldEntriesOf(group, range);
  }

  heartbeatLane(lane: number): Promise<HeartbeatLaneState | undefined> {
    return this.#lanes.heartbeatLane(lane);
  }

  saveHeartbeatLane(lane: number, state: HeartbeatLaneState): Promise<void> {
    return this.#lanes.saveHeartbeatLane(lane, state);
  }

  heartbeatLanes(): Promise<Map<number, HeartbeatLaneState>> {
    return this.#lanes.heartbeatLanes();
  }

  heartbeatPlan(): Promise<LanePlanRecord | undefined> {
    return this.#lanes.heartbeatPlan();
  }

  saveHeartbeatPlan(record: LanePlanRecord): Promise<void> {
    return this.#lanes.saveHeartbeatPlan(record);
  }
  livenessMark(): Promise<EpochMillis | undefined> {
    return this.#sweeper.livenessMark();
  }
  setLivenessMark(at: EpochMillis): Promise<void> {
    return this.#sweeper.setLivenessMark(at);
  }
  acquireSweepLease(
    holder: string,
    now: EpochMillis,
    until: EpochMillis,
    lane?: number,
  ): Promise<SweepLease> {
    return this.#sweeper.acquireSweepLease(holder, now, until, lane);
  }
  releaseSweepLease(holder: string, lane?: number): Promise<void> {
    return this.#sweeper.releaseSweepLease(holder, lane);
  }
  disruptionRecord(): Promise<DisruptionRecord | undefined> {
    return this.#sweeper.disruptionRecord();
  }
  saveDisruptionRecord(record: DisruptionRecord): Promise<void> {
    return this.#sweeper.saveDisruptionRecord(record);
  }
  releaseHold(at: EpochMillis): Promise<'released' | 'normal'> {
    return this.#sweeper.releaseHold(at);
  }
  zoneCounts(): Promise<ZoneCount[]> {
    return this.#counters.zoneCounts();
  }
}
