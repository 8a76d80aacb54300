import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DisruptionRecord, ZoneCount } from '../domain/disruption.ts';
import type { EntryEvent } from '../domain/entry-events.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { Heartbeat } from '../domain/heartbeat.ts';
import type { LanePlanRecord } from '../domain/heartbeat-lanes.ts';
import type { HolderBeat } from '../domain/holder-heartbeat.ts';
import type { EpochMillis, ObjectRef, WorkloadEntry, WorkloadGroup } from '../domain/model.ts';
import type { LivenessWindow, SweepCutoffs } from '../domain/sweep-policy.ts';
import { DynamoDbAddressClaims } from './dynamodb-address-claims.ts';
import { DynamoDbCatalog } from './dynamodb-catalog.ts';
import { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { DynamoDbConnectionRecords } from './dynamodb-connection-records.ts';
import { DynamoDbCordon } from './dynamodb-cordon.ts';
import { DynamoDbDepartureQueues } from './dynamodb-departure-queues.ts';
import {
  type DeletedEntryHistory,
  DynamoDbEntryHistory,
  type HistoryLost,
} from './dynamodb-entry-history.ts';
import { DynamoDbEntryLifecycle } from './dynamodb-entry-lifecycle.ts';
import { DynamoDbHeartbeatGroups } from './dynamodb-heartbeat-groups.ts';
import { DynamoDbHeartbeatLanes } from './dynamodb-heartbeat-lanes.ts';
import { DynamoDbHolderBeats } from './dynamodb-holder-beats.ts';
import { DynamoDbInstanceIndex } from './dynamodb-instance-index.ts';
import { DynamoDbSweepIndex } from './dynamodb-sweep-index.ts';
import { DynamoDbSweeperState } from './dynamodb-sweeper-state.ts';
import { RegistryTable } from './dynamodb-table.ts';
import type {
  CordonOutcome,
  CordonStore,
  EntryEventStore,
  UncordonOutcome,
} from './entry-event-store.ts';
import type {
  AddressClaim,
  AwayCount,
  CatalogStore,
  ClaimResult,
  ConnectChange,
  ConnectionRecord,
  ConnectOutcome,
  DepartureKey,
  DeparturesInGrace,
  DisruptionStore,
  EntryDeletion,
  HealthOutcome,
  HealthReport,
  HeartbeatGroups,
  HeartbeatLaneState,
  HolderRef,
  InstanceStore,
  LeaveChange,
  LeaveResult,
  NameRange,
  NamespaceList,
  RegistryStore,
  StoredGroup,
  SweepIndexState,
  SweepLease,
} from './registry-store.ts';

/**
 * The registry on one DynamoDB table (docs/architecture.md), composed of one adapter per
 * concern, each owning its keys and conditions: the entry lifecycle (event path), the sweep
 * index, the sweeper's state, fail static's cell counters, the instance index, address
 * claims, connection records and the operators' catalog. This class only composes.
 */
export class DynamoDbRegistryStore
  implements
    RegistryStore,
    CatalogStore,
    DisruptionStore,
    InstanceStore,
    CordonStore,
    EntryEventStore
{
  readonly #entries: DynamoDbEntryLifecycle;
  readonly #connections: DynamoDbConnectionRecords;
  readonly #sweepIndex: DynamoDbSweepIndex;
  readonly #departures: DynamoDbDepartureQueues;
  readonly #sweeper: DynamoDbSweeperState;
  readonly #heartbeats: DynamoDbHeartbeatGroups;
  readonly #lanes: DynamoDbHeartbeatLanes;
  readonly #counters: DynamoDbCellCounters;
  readonly #instances: DynamoDbInstanceIndex;
  readonly #addresses: DynamoDbAddressClaims;
  readonly #catalog: DynamoDbCatalog;
  readonly #history: DynamoDbEntryHistory;
  readonly #cordons: DynamoDbCordon;
  readonly #beats: DynamoDbHolderBeats;

  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    options: { onHistoryLost?: HistoryLost } = {},
  ) {
    const table = new RegistryTable(client, tableName);
    this.#history = new DynamoDbEntryHistory(client, tableName, options.onHistoryLost);
    this.#counters = new DynamoDbCellCounters(table);
    this.#connections = new DynamoDbConnectionRecords(table);
    this.#entries = new DynamoDbEntryLifecycle(table, this.#counters, this.#connections);
    this.#sweepIndex = new DynamoDbSweepIndex(table, this.#counters, this.#history);
    this.#departures = new DynamoDbDepartureQueues(table, this.#counters);
    this.#sweeper = new DynamoDbSweeperState(table);
    this.#heartbeats = new DynamoDbHeartbeatGroups(table);
    this.#lanes = new DynamoDbHeartbeatLanes(table);
    this.#instances = new DynamoDbInstanceIndex(table, this.#counters, this.#history);
    this.#addresses = new DynamoDbAddressClaims(client, tableName);
    this.#catalog = new DynamoDbCatalog(client, tableName, this.#history);
    this.#cordons = new DynamoDbCordon(table);
    this.#beats = new DynamoDbHolderBeats(table);
  }

  // Address claims
  claimAddress(claim: AddressClaim): Promise<ClaimResult> {
    return this.#addresses.claim(claim);
  }
  takeAddress(claim: AddressClaim, from: ObjectRef): Promise<boolean> {
    return this.#addresses.take(claim, from);
  }
  noteAddressConflict(
    holder: ObjectRef,
    claim: AddressClaim,
    intervalMs: number,
  ): Promise<boolean> {
    return this.#entries.noteAddressConflict(holder, claim, intervalMs);
  }

  // The entry lifecycle: connect, disconnect, liveness drops, health, drain
  getGroup(ref: ObjectRef): Promise<StoredGroup | undefined> {
    return this.#entries.getGroup(ref);
  }
  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined> {
    return this.#entries.getEntry(ref);
  }
  connect(change: ConnectChange): Promise<ConnectOutcome> {
    return this.#entries.connect(change);
  }
  withdrawCreated(ref: ObjectRef, origin: string): Promise<void> {
    return this.#entries.withdrawCreated(ref, origin);
  }
  leave(change: LeaveChange): Promise<LeaveResult> {
    return this.#entries.leave(change);
  }
  dropHolders(
    entry: ObjectRef,
    gone: readonly string[],
    at: EpochMillis,
    silent?: { why: string },
  ): Promise<'disconnected' | 'still-held' | 'unchanged'> {
    return this.#entries.dropHolders(entry, gone, at, silent);
  }
  reportHealth(report: HealthReport): Promise<HealthOutcome> {
    return this.#entries.reportHealth(report);
  }
  drain(holder: HolderRef, at: EpochMillis): Promise<'draining' | 'not-holder'> {
    return this.#entries.drain(holder, at);
  }

  // IAM mode's connection records
  getConnection(connectionId: string): Promise<ConnectionRecord | undefined> {
    return this.#connections.get(connectionId);
  }
  forgetConnection(connectionId: string): Promise<void> {
    return this.#connections.forget(connectionId);
  }

  // The sweep index: the keys every namespace shares, and each namespace's departures
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
  departuresInGrace(disconnectedAfter: EpochMillis, limit: number): Promise<DeparturesInGrace> {
    return this.#departures.inGrace(disconnectedAfter, limit);
  }
  moveDeparturesToSharedKeys(limit?: number): Promise<{ moved: number; more: boolean }> {
    return this.#departures.moveToSharedKeys(limit);
  }
  awayByZone(limit: number, namespaces?: readonly string[]): Promise<AwayCount | undefined> {
    return this.#departures.awayByZone(limit, namespaces);
  }
  newestConnectAt(): Promise<EpochMillis | undefined> {
    return this.#sweepIndex.newestConnectAt();
  }

  // The sweeper's state: lease, liveness cursor, fail static's record
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

  // Fail static's cell counters
  zoneCounts(): Promise<ZoneCount[]> {
    return this.#counters.zoneCounts();
  }

  // The instance index (EC2 state changes)
  entriesOfInstance(instanceId: string): Promise<ObjectRef[]> {
    return this.#instances.entriesOfInstance(instanceId);
  }
  removeInstanceEntry(
    ref: ObjectRef,
    instanceId: string,
    at?: EpochMillis,
  ): Promise<'deleted' | 'kept'> {
    return this.#instances.removeInstanceEntry(ref, instanceId, at);
  }

  // The operators' catalog
  applyGroup(group: WorkloadGroup) {
    return this.#catalog.applyGroup(group);
  }
  listGroups(namespace?: string): Promise<StoredGroup[]> {
    return this.#catalog.listGroups(namespace);
  }
  deleteGroup(ref: ObjectRef): Promise<boolean> {
    return this.#catalog.deleteGroup(ref);
  }
  applyEntry(entry: WorkloadEntry) {
    return this.#catalog.applyEntry(entry);
  }
  listEntries(namespace?: string): Promise<EntryRecord[]> {
    return this.#catalog.listEntries(namespace);
  }
  listNamespaces(): Promise<NamespaceList> {
    return this.#catalog.listNamespaces();
  }
  deleteEntry(ref: ObjectRef, deletion?: EntryDeletion): Promise<boolean> {
    return this.#catalog.deleteEntry(ref, deletion);
  }
  removeEntry(
    ref: ObjectRef,
    deletion?: EntryDeletion,
  ): Promise<{ holders: string[] } | undefined> {
    return this.#catalog.removeEntry(ref, deletion);
  }

  // Operators' maintenance and the entries' event history
  cordon(ref: ObjectRef, message: string, at: EpochMillis): Promise<CordonOutcome> {
    return this.#cordons.cordon(ref, message, at);
  }
  uncordon(ref: ObjectRef, at: EpochMillis): Promise<UncordonOutcome> {
    return this.#cordons.uncordon(ref, at);
  }
  recordHeartbeat(
    holder: HolderRef,
    beat: HolderBeat,
    event: EntryEvent,
  ): Promise<'recorded' | 'not-holder'> {
    return this.#beats.recordHeartbeat(holder, beat, event);
  }
  recordEvent(ref: ObjectRef, event: EntryEvent): Promise<boolean> {
    return this.#entries.recordEvent(ref, event);
  }
  deletedEntries(
    namespace: string,
    name: string | undefined,
    now: EpochMillis,
  ): Promise<DeletedEntryHistory[]> {
    return this.#history.list(namespace, name, now);
  }
  pruneExpiredHistory(namespaces: readonly string[], now: EpochMillis, limit: number) {
    return this.#history.pruneExpired(namespaces, now, limit);
  }
}
