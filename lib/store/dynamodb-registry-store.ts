import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import {
  cellKey,
  type DepartureKind,
  type DisruptionRecord,
  splitCell,
  type ZoneCount,
  zoneOf,
} from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import {
  type EpochMillis,
  formatRef,
  type ObjectRef,
  type WorkloadEntry,
  type WorkloadGroup,
} from '../domain/model.ts';
import type { LivenessWindow, SweepCutoffs } from '../domain/sweep-policy.ts';
import { DynamoDbAddressClaims } from './dynamodb-address-claims.ts';
import { DynamoDbCatalog } from './dynamodb-catalog.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import {
  type CleanExitGuard,
  cleanExitUpdate,
  connectAsNewest,
  connectAsOlder,
  drainUpdate,
  healthUpdate,
  instanceGoneDelete,
  leaveAsLast,
  leaveAsOneOfMany,
  tombstone,
  zoneCountUpdate,
} from './dynamodb-entry-writes.ts';
import {
  connectionKey,
  decodeConnectionRecord,
  decodeEntry,
  decodeGroup,
  type EntryItem,
  encodeConnectionRecord,
  entryKey,
  groupKey,
  holderTimes,
  type Item,
  sweepState,
} from './item-codec.ts';
import { mergeOrdered } from './merge-ordered.ts';
import type {
  AddressClaim,
  CatalogStore,
  ClaimResult,
  ConnectChange,
  ConnectionRecord,
  ConnectOutcome,
  DisruptionStore,
  HealthOutcome,
  HealthReport,
  Holder,
  HolderRef,
  InstanceStore,
  LeaveChange,
  LeaveResult,
  NamespaceList,
  RegistryStore,
  StoredGroup,
  SweepIndexState,
  SweepLease,
} from './registry-store.ts';
import {
  INSTANCE_INDEX,
  SWEEP_INDEX,
  SWEEP_SHARDS,
  ZONE_SHARDS,
  zonePartition,
  zoneShardOf,
} from './table-definition.ts';

/**
 * Rounds of conditional writes before a connect or disconnect gives up. Each round re-reads
 * the entry; only a racing delete or another connection's write in between needs a second.
 */
const ROUNDS = 3;

/** The sweeper's own state: how far its liveness checks have covered time. */
const LIVENESS_MARK_KEY = { pk: 'SWEEPER', sk: 'liveness' };
/** The sweeper's fail-static record (lib/domain/disruption.ts). */
const DISRUPTION_KEY = { pk: 'SWEEPER', sk: 'disruption' };
/** Which sweeper run holds the sweep, and until when. */
const SWEEP_LEASE_KEY = { pk: 'SWEEPER', sk: 'lease' };

/**
 * The registry on one DynamoDB table (docs/architecture.md). Each lifecycle event is one
 * conditional write on the entry in the common case; a lost condition is an outcome, and the
 * entry is read only to tell which outcome.
 */
export class DynamoDbRegistryStore
  implements RegistryStore, CatalogStore, DisruptionStore, InstanceStore
{
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #catalog: DynamoDbCatalog;
  readonly #addresses: DynamoDbAddressClaims;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
    this.#catalog = new DynamoDbCatalog(client, tableName);
    this.#addresses = new DynamoDbAddressClaims(client, tableName);
  }

  claimAddress(claim: AddressClaim): Promise<ClaimResult> {
    return this.#addresses.claim(claim);
  }

  takeAddress(claim: AddressClaim, from: ObjectRef): Promise<boolean> {
    return this.#addresses.take(claim, from);
  }

  async noteAddressConflict(holder: ObjectRef, claim: AddressClaim): Promise<void> {
    await this.#tryUpdate({
      TableName: this.#table,
      Key: entryKey(holder),
      UpdateExpression: 'SET addressConflict = :conflict',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: {
        ':conflict': { at: claim.at, claimant: formatRef(claim.entry) },
      },
    });
  }

  async getGroup(ref: ObjectRef): Promise<StoredGroup | undefined> {
    const item = await this.#get(groupKey(ref));
    return item ? decodeGroup(item) : undefined;
  }

  /**
   * Makes the connection a holder of its entry (rule 8), creating the entry on the first
   * connect. The newest connect is one write; an older one processed late is two; a refusal
   * reads the entry once to say which rule refused. Every write here is idempotent, so the
   * SDK's retry after a lost response lands on the same state.
   */
  async connect(change: ConnectChange): Promise<ConnectOutcome> {
    const ref = change.entry.metadata;
    if (change.recordConnection) {
      // First, so no holder ever lacks its record. A refused connect leaves a record of a
      // connection that never opened; it points at nothing it holds and expires.
      const record = {
        connectionId: change.connectionId,
        entry: ref,
        connectedAt: change.connectedAt,
      };
      await this.#client.send(
        new PutCommand({ TableName: this.#table, Item: encodeConnectionRecord(record) }),
      );
    }
    // A caller the template refuses may only join an entry that exists: no entry, no write.
    if (!change.mayCreate && !(await this.#getEntryItem(ref))) return 'forbidden';
    for (let round = 0; round < ROUNDS; round++) {
      const newest = await this.#tryUpdate(connectAsNewest(this.#table, change));
      if (newest) {
        await this.#countConnect(newest.Attributes, change);
        return newest.Attributes?.revision === undefined ? 'created' : 'reconnected';
      }
      if (await this.#tryUpdate(connectAsOlder(this.#table, change))) return 'joined';
      const existing = await this.#getEntryItem(ref);
      // None to join, and the template does not let this caller create one.
      if (!existing && !change.mayCreate) return 'forbidden';
      // Deleted by the sweeper between the writes and the read: the next round creates it.
      if (!existing) continue;
      const refusal = connectRefusal(existing, change);
      if (refusal) return refusal;
      // Another connect or disconnect changed the entry between the two writes: again.
    }
    throw new Error(`connect to ${ref.namespace}/${ref.name} kept racing with other writes`);
  }

  async withdrawCreated(ref: ObjectRef, origin: string): Promise<void> {
    try {
      await this.#client.send(
        new DeleteCommand({
          TableName: this.#table,
          Key: entryKey(ref),
          ConditionExpression: 'origin = :origin',
          ExpressionAttributeValues: { ':origin': origin },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }

  /**
   * The connection stops holding its entry. The last holder marks it disconnected; with others
   * left only this one is forgotten. Which write goes first is a guess (the `replaced` hint);
   * the conditions decide. A connection that holds nothing leaves a tombstone, so that its own
   * `$connect`, should API Gateway run it after this, does not make it a holder.
   */
  async leave(change: LeaveChange): Promise<LeaveResult> {
    const { entry, connectionId, at } = change;
    const departure = change.departure ?? 'abnormal';
    const { since } = change;
    const leaveLast = async (kind: DepartureKind, guard?: CleanExitGuard) => {
      const output = await this.#tryUpdate(
        leaveAsLast(this.#table, entry, [connectionId], at, kind, guard),
      );
      if (!output) return undefined;
      await this.#countLeave(output.Attributes, kind);
      return { outcome: 'disconnected' } as const;
    };
    const guarded = departure === 'abnormal' && since !== undefined;
    // An abnormal close is the last holder's only if no newer connection left cleanly.
    const last = (): Promise<LeaveResult | undefined> =>
      guarded ? leaveLast('abnormal', { since, newer: 'none' }) : leaveLast(departure);
    // Else it is a leftover (its $disconnect late, the VM's newest connection the clean one):
    // clean. Tried last, so an abnormal close that leaves other holders costs no extra write.
    const lastAfterCleanExit = (): Promise<LeaveResult | undefined> =>
      guarded ? leaveLast('clean', { since, newer: 'clean' }) : Promise.resolve(undefined);
    const oneOfMany = async (): Promise<LeaveResult | undefined> => {
      const output = await this.#tryUpdate(leaveAsOneOfMany(this.#table, entry, [connectionId]));
      if (!output) return undefined;
      // A clean close that leaves holders behind, other than a rotation's old connection
      // (the VM lives on in the newer one): mark it for the holders left over.
      if (departure === 'clean' && !change.replaced && since !== undefined) {
        await this.#tryUpdate(cleanExitUpdate(this.#table, entry, since));
      }
      return { outcome: 'still-held', holders: holdersOf(output.Attributes) };
    };
    // Every rotation ends with the old connection's $disconnect while the new one holds the
    // entry; trying "one of many" first there keeps that common case at one write.
    const attempts = change.replaced
      ? [oneOfMany, last, lastAfterCleanExit]
      : [last, oneOfMany, lastAfterCleanExit];
    for (let round = 0; round < ROUNDS; round++) {
      for (const attempt of attempts) {
        const result = await attempt();
        if (result) return result;
      }
      // Not a holder, or a holder joined or left between the two writes.
      try {
        await this.#client.send(new UpdateCommand(tombstone(this.#table, entry, connectionId)));
        return { outcome: 'not-holder' };
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
      }
      const existing = await this.#getEntryItem(entry);
      if (!existing?.autoRegistrationGroup) return { outcome: 'not-holder' };
    }
    throw new Error(
      `disconnect of ${connectionId} kept racing on ${entry.namespace}/${entry.name}`,
    );
  }

  async dropHolders(
    entry: ObjectRef,
    gone: readonly string[],
    at: EpochMillis,
  ): Promise<'disconnected' | 'still-held' | 'unchanged'> {
    for (let round = 0; round < ROUNDS; round++) {
      const item = await this.#getEntryItem(entry);
      const holders = [...(item?.conns ?? [])];
      const dropping = gone.filter((id) => holders.includes(id));
      if (dropping.length === 0) return 'unchanged';
      const last = dropping.length === holders.length;
      // Found gone by API Gateway, without a $disconnect: abnormal, unless a connection newer
      // than every one of them already left cleanly (they are leftovers of lost $disconnects:
      // see CleanExitGuard). The write's condition re-checks the mark the read saw.
      const times = item ? holderTimes(item) : {};
      const newest = Math.max(...dropping.map((id) => times[id] ?? Number.MAX_VALUE));
      const cleanExit = item?.cleanExitSince;
      const departure: DepartureKind =
        cleanExit !== undefined && newest <= cleanExit ? 'clean' : 'abnormal';
      const write = last
        ? leaveAsLast(
            this.#table,
            entry,
            dropping,
            at,
            departure,
            departure === 'clean' ? { since: newest, newer: 'clean' } : undefined,
          )
        : leaveAsOneOfMany(this.#table, entry, dropping);
      const output = await this.#tryUpdate(write);
      if (output) {
        if (last) await this.#countLeave(output.Attributes, departure);
        return last ? 'disconnected' : 'still-held';
      }
    }
    return 'unchanged';
  }

  /**
   * One conditional write. Read only when it fails, to tell a report that a newer one
   * superseded (the agent is fine) from a connection that holds nothing (it must reconnect).
   */
  async reportHealth(report: HealthReport): Promise<HealthOutcome> {
    const output = await this.#tryUpdate(healthUpdate(this.#table, report));
    if (output) {
      const status = report.healthy ? 'True' : 'False';
      return output.Attributes?.healthStatus === status ? 'refreshed' : 'transitioned';
    }
    const item = await this.#getEntryItem(report.entry);
    return item?.conns?.has(report.connectionId) ? 'superseded' : 'not-holder';
  }

  async getConnection(connectionId: string): Promise<ConnectionRecord | undefined> {
    // Consistent: a $disconnect or health report can follow its $connect by milliseconds.
    const item = await this.#get(connectionKey(connectionId));
    return item ? decodeConnectionRecord(item) : undefined;
  }

  async forgetConnection(connectionId: string): Promise<void> {
    await this.#client.send(
      new DeleteCommand({ TableName: this.#table, Key: connectionKey(connectionId) }),
    );
  }

  async getEntry(ref: ObjectRef): Promise<EntryRecord | undefined> {
    const item = await this.#getEntryItem(ref);
    return item ? decodeEntry(item) : undefined;
  }

  /**
   * Queries the sparse sweep index, shard by shard: disconnected entries with
   * `sweepAt <= disconnectedAtOrBefore`, connected ones with `sweepAt < connectedBefore`. It
   * reads only entries that are due, never the table. The index is eventually consistent: the
   * sweeper re-checks each record and its delete is conditional on the revision read.
   */
  async *sweepCandidates(
    cutoffs: SweepCutoffs,
    limit: number,
    states: readonly SweepIndexState[] = ['L', 'D', 'C'],
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord> {
    const ranges = states.map((state) =>
      state === 'C'
        ? { state, condition: 'sweepAt < :to', values: { ':to': cutoffs.connectedBefore } }
        : { state, condition: 'sweepAt <= :to', values: { ':to': cutoffs.disconnectedAtOrBefore } },
    );
    yield* this.#queryIndex(ranges, limit, onReadFailure);
  }

  /** Connected entries (state C, keyed by their newest connect) in the liveness windows. */
  /**
   * In due-time order (newest connect + the window's `dueAfterMs`): one query stream per window
   * and shard, merged, each read a page at a time. A run that stops early has then checked
   * exactly the entries due before some time, and the next run starts there.
   */
  async *connectedIn(
    windows: readonly LivenessWindow[],
    limit: number,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord> {
    const streams = windows.flatMap((window) =>
      Array.from({ length: SWEEP_SHARDS }, (_, shard) => {
        const dueAfterMs = window.dueAfterMs ?? 0;
        const items = this.#isolated(
          queryItems(this.#client, {
            TableName: this.#table,
            IndexName: SWEEP_INDEX.name,
            // BETWEEN is inclusive; the windows are half-open [from, to).
            KeyConditionExpression: 'sweepState = :state AND sweepAt BETWEEN :from AND :to',
            ExpressionAttributeValues: {
              ':state': sweepState('C', shard),
              ':from': window.from,
              ':to': window.to - 1,
            },
          }),
          onReadFailure,
        );
        return withDueTime(items, dueAfterMs);
      }),
    );
    let remaining = limit;
    for await (const { item } of mergeOrdered(streams, (entry) => entry.dueAt)) {
      if (remaining-- <= 0) return;
      yield decodeEntry(item);
    }
  }

  async livenessMark(): Promise<EpochMillis | undefined> {
    const item = await this.#get(LIVENESS_MARK_KEY);
    return typeof item?.checkedUpTo === 'number' ? item.checkedUpTo : undefined;
  }

  async setLivenessMark(at: EpochMillis): Promise<void> {
    await this.#client.send(
      new PutCommand({ TableName: this.#table, Item: { ...LIVENESS_MARK_KEY, checkedUpTo: at } }),
    );
  }

  /**
   * Deletes the entry only at the revision the sweeper read: a reconnect (or a health report)
   * that landed after the read bumped it, and the entry stays. A condition that fails because
   * the entry is gone is the SDK retrying this delete after a lost response (or an operator
   * deleting it too): the entry is deleted either way.
   */
  async deleteSwept(record: EntryRecord): Promise<'deleted' | 'conflict'> {
    try {
      await this.#client.send(
        new DeleteCommand({
          TableName: this.#table,
          Key: entryKey(record.entry.metadata),
          ConditionExpression: 'revision = :revision',
          ExpressionAttributeValues: { ':revision': record.revision },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      if (await this.#getEntryItem(record.entry.metadata)) return 'conflict';
    }
    // Also when the entry was gone already (a retried delete, or an operator's delete, which
    // counts nothing): the counters follow the entries either way.
    await this.#count(
      record.entry.metadata,
      zoneOf(record.entry.spec.locality),
      removalDelta(record),
      transition(record.entry.metadata, record.revision, 'swept'),
    );
    return 'deleted';
  }

  async drain(holder: HolderRef, at: EpochMillis): Promise<'draining' | 'not-holder'> {
    return (await this.#tryUpdate(drainUpdate(this.#table, holder, at)))
      ? 'draining'
      : 'not-holder';
  }

  /**
   * Every counter item of every cell, summed: ZONE_SHARDS partitions read side by side.
   * O(cells x CELL_SPREAD) items, never the entries. Items of before (a zone without a
   * namespace) are skipped.
   */
  async zoneCounts(): Promise<ZoneCount[]> {
    const partitions = Array.from({ length: ZONE_SHARDS }, (_, shard) => zonePartition(shard));
    const pages = await Promise.all(
      partitions.map(async (pk) => {
        const items: Item[] = [];
        const query = queryItems(this.#client, {
          TableName: this.#table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
        });
        for await (const item of query) items.push(item);
        return items;
      }),
    );
    const totals = new Map<string, ZoneCount>();
    for (const item of pages.flat()) {
      const key = String(item.sk);
      const cell = splitCell(key);
      if (!cell) continue;
      const total = totals.get(key) ?? { ...cell, connected: 0, away: 0 };
      total.connected += typeof item.connected === 'number' ? item.connected : 0;
      total.away += typeof item.away === 'number' ? item.away : 0;
      totals.set(key, total);
    }
    return [...totals.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, count]) => count);
  }

  async awayByZone(limit: number): Promise<Record<string, number> | undefined> {
    const away: Record<string, number> = {};
    let seen = 0;
    for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
      const items = queryItems(
        this.#client,
        {
          TableName: this.#table,
          IndexName: SWEEP_INDEX.name,
          KeyConditionExpression: 'sweepState = :state',
          ExpressionAttributeValues: { ':state': sweepState('D', shard) },
          ProjectionExpression: 'pk, #entry.spec.locality',
          ExpressionAttributeNames: { '#entry': 'entry' },
        },
        limit - seen + 1,
      );
      for await (const item of items) {
        seen += 1;
        if (seen > limit) return undefined;
        const locality = (item.entry as { spec?: { locality?: string } } | undefined)?.spec
          ?.locality;
        const pk = String(item.pk);
        const cell = cellKey(pk.slice(pk.indexOf('#') + 1), zoneOf(locality));
        away[cell] = (away[cell] ?? 0) + 1;
      }
    }
    return away;
  }

  /** One item from the newest end of each connected shard: O(shards), never O(entries). */
  async newestConnectAt(): Promise<EpochMillis | undefined> {
    let newest: EpochMillis | undefined;
    for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
      const items = queryItems(
        this.#client,
        {
          TableName: this.#table,
          IndexName: SWEEP_INDEX.name,
          KeyConditionExpression: 'sweepState = :state',
          ExpressionAttributeValues: { ':state': sweepState('C', shard) },
          ScanIndexForward: false,
          ProjectionExpression: 'sweepAt',
        },
        1,
      );
      for await (const item of items) {
        if (typeof item.sweepAt === 'number' && (newest === undefined || item.sweepAt > newest)) {
          newest = item.sweepAt;
        }
      }
    }
    return newest;
  }

  async disruptionRecord(): Promise<DisruptionRecord | undefined> {
    const item = await this.#get(DISRUPTION_KEY);
    if (!item || typeof item.record !== 'string') return undefined;
    const record = JSON.parse(item.record) as DisruptionRecord;
    if (typeof item.releasedAt === 'number') record.releasedAt = item.releasedAt;
    return record;
  }

  /**
   * The record is one JSON string (zone names as keys stay out of DynamoDB's attribute-name
   * rules); an operator's release is an attribute beside it, so a sweeper run that read the
   * record before `registrar sweep --force` wrote does not erase the release. Only a run that
   * found the disruption over removes it.
   */
  /**
   * One conditional put: taken when no lease exists, the last one ran out, or this holder has
   * it (the SDK retrying a put that was applied). A lost condition (a late tick, rare) reads
   * the lease to say who holds it.
   */
  async acquireSweepLease(
    holder: string,
    now: EpochMillis,
    until: EpochMillis,
  ): Promise<SweepLease> {
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#table,
          Item: { ...SWEEP_LEASE_KEY, holder, until },
          ConditionExpression: 'attribute_not_exists(pk) OR #until <= :now OR holder = :holder',
          ExpressionAttributeNames: { '#until': 'until' },
          ExpressionAttributeValues: { ':now': now, ':holder': holder },
        }),
      );
      return { acquired: true };
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const item = await this.#get(SWEEP_LEASE_KEY);
      return {
        acquired: false,
        holder: String(item?.holder ?? 'unknown'),
        until: Number(item?.until ?? now),
      };
    }
  }

  /** Ends the lease (until 0: free whatever any clock says), only if this holder has it. */
  async releaseSweepLease(holder: string): Promise<void> {
    try {
      await this.#client.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: SWEEP_LEASE_KEY,
          UpdateExpression: 'SET #until = :free',
          ConditionExpression: 'holder = :holder',
          ExpressionAttributeNames: { '#until': 'until' },
          ExpressionAttributeValues: { ':free': 0, ':holder': holder },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }

  async saveDisruptionRecord(record: DisruptionRecord): Promise<void> {
    const { releasedAt, ...rest } = record;
    const over = record.mode === 'normal' && record.disruptedZones.length === 0;
    await this.#client.send(
      new UpdateCommand({
        TableName: this.#table,
        Key: DISRUPTION_KEY,
        UpdateExpression:
          releasedAt !== undefined
            ? 'SET #record = :record, releasedAt = :releasedAt'
            : `SET #record = :record${over ? ' REMOVE releasedAt' : ''}`,
        ExpressionAttributeNames: { '#record': 'record' },
        ExpressionAttributeValues: {
          ':record': JSON.stringify(rest),
          ...(releasedAt !== undefined ? { ':releasedAt': releasedAt } : {}),
        },
      }),
    );
  }

  async releaseHold(at: EpochMillis): Promise<'released' | 'normal'> {
    const record = await this.disruptionRecord();
    if (!record || (record.mode === 'normal' && record.disruptedZones.length === 0)) {
      return 'normal';
    }
    await this.#client.send(
      new UpdateCommand({
        TableName: this.#table,
        Key: DISRUPTION_KEY,
        UpdateExpression: 'SET releasedAt = :at',
        ExpressionAttributeValues: { ':at': at },
      }),
    );
    return 'released';
  }

  async entriesOfInstance(instanceId: string): Promise<ObjectRef[]> {
    const refs: ObjectRef[] = [];
    const items = queryItems(this.#client, {
      TableName: this.#table,
      IndexName: INSTANCE_INDEX.name,
      KeyConditionExpression: 'instanceId = :id',
      ExpressionAttributeValues: { ':id': instanceId },
    });
    for await (const item of items) {
      const pk = String(item.pk);
      const sk = String(item.sk);
      refs.push({ namespace: pk.slice(pk.indexOf('#') + 1), name: sk.slice(sk.indexOf('#') + 1) });
    }
    return refs;
  }

  async removeInstanceEntry(ref: ObjectRef, instanceId: string): Promise<'deleted' | 'kept'> {
    try {
      const output = await this.#client.send(
        new DeleteCommand(instanceGoneDelete(this.#table, ref, instanceId)),
      );
      if (output.Attributes) {
        const old = decodeEntry(output.Attributes);
        await this.#count(
          old.entry.metadata,
          zoneOf(old.entry.spec.locality),
          removalDelta(old),
          transition(old.entry.metadata, old.revision, 'instance-gone'),
        );
      }
      return 'deleted';
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return 'kept';
    }
  }

  /** A connect that made the entry connected (new, or back after a departure). */
  async #countConnect(old: Record<string, unknown> | undefined, change: ConnectChange) {
    if (old?.connectedAt !== undefined) return; // connected already: a rotation or a join
    const locality = old
      ? (old.entry as EntryItem['entry']).spec.locality
      : change.entry.spec.locality;
    const wasAway =
      old !== undefined && old.departure !== 'clean' && old.disconnectedAt !== undefined;
    await this.#count(
      change.entry.metadata,
      zoneOf(locality),
      { connected: 1, ...(wasAway ? { away: -1 } : {}) },
      transition(change.entry.metadata, old?.revision, `connect:${change.connectionId}`),
    );
  }

  /** The last holder left: one fewer connected, one more away after an abnormal departure. */
  async #countLeave(old: Record<string, unknown> | undefined, departure: DepartureKind) {
    const entry = old?.entry as EntryItem['entry'] | undefined;
    await this.#count(
      entry?.metadata,
      zoneOf(entry?.spec.locality),
      { connected: -1, ...(departure === 'abnormal' ? { away: 1 } : {}) },
      transition(entry?.metadata, old?.revision, 'leave'),
    );
  }

  /**
   * Moves the counters of the entry's cell (its namespace in its zone) in the entry's shard.
   * `op` names the transition (entry and its revision before it): see zoneCountUpdate.
   */
  async #count(
    ref: { namespace?: string; name?: string } | undefined,
    zone: string,
    delta: { connected?: number; away?: number },
    op: string,
  ) {
    const cell = cellKey(ref?.namespace ?? '', zone);
    const update = zoneCountUpdate(this.#table, cell, zoneShardOf(ref), delta, op);
    if (!update) return;
    try {
      await this.#client.send(new UpdateCommand(update));
    } catch (error) {
      // Our own earlier attempt was applied (its response was lost): counted already.
      if (!isConditionFailed(error)) throw error;
    }
  }

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
  deleteEntry(ref: ObjectRef): Promise<boolean> {
    return this.#catalog.deleteEntry(ref);
  }
  removeEntry(ref: ObjectRef): Promise<{ holders: string[] } | undefined> {
    return this.#catalog.removeEntry(ref);
  }

  async *#queryIndex(
    ranges: { state: SweepIndexState; condition: string; values: Record<string, number> }[],
    limit: number,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord> {
    let remaining = limit;
    for (const range of ranges) {
      for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
        const items = this.#isolated(
          queryItems(
            this.#client,
            {
              TableName: this.#table,
              IndexName: SWEEP_INDEX.name,
              KeyConditionExpression: `sweepState = :state AND ${range.condition}`,
              ExpressionAttributeValues: {
                ':state': sweepState(range.state, shard),
                ...range.values,
              },
            },
            remaining,
          ),
          onReadFailure,
        );
        for await (const item of items) {
          remaining -= 1;
          yield decodeEntry(item);
        }
        if (remaining <= 0) return;
      }
    }
  }

  /** The items of one shard's query; a failed read ends it, told to `onReadFailure` if given. */
  async *#isolated<T>(
    items: AsyncIterable<T>,
    onReadFailure: ((error: unknown) => void) | undefined,
  ): AsyncIterable<T> {
    try {
      yield* items;
    } catch (error) {
      if (!onReadFailure) throw error;
      onReadFailure(error);
    }
  }

  #getEntryItem(ref: ObjectRef): Promise<EntryItem | undefined> {
    return this.#get(entryKey(ref)) as Promise<EntryItem | undefined>;
  }

  async #get(key: Record<string, string>): Promise<Item | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#table, Key: key, ConsistentRead: true }),
    );
    return Item;
  }

  /** The write's output, or undefined when its condition failed. */
  async #tryUpdate(input: UpdateCommandInput) {
    try {
      return await this.#client.send(new UpdateCommand(input));
    } catch (error) {
      if (isConditionFailed(error)) return undefined;
      throw error;
    }
  }
}

/** What removing an entry takes off its zone's counters: its part in `connected` or `away`. */
function removalDelta(record: EntryRecord): { connected?: number; away?: number } {
  const connection = record.connection;
  if (!connection) return {};
  if (connection.connectedAt !== undefined) return { connected: -1 };
  if (connection.disconnectedAt !== undefined && connection.departure !== 'clean') {
    return { away: -1 };
  }
  return {};
}

/** Which rule refused a connect, read from the entry it would join; undefined: none did. */
function connectRefusal(item: EntryItem, change: ConnectChange): ConnectOutcome | undefined {
  // Rule 7: an entry someone wrote by hand is theirs.
  if (item.autoRegistrationGroup === undefined) return 'conflict';
  if (item.origin !== undefined && item.origin !== change.origin) return 'collision';
  const account = item.entry.spec.serviceAccount || undefined;
  if (account !== undefined && account !== change.identity.serviceAccount) return 'forbidden';
  if (item.departed?.has(change.connectionId)) return 'departed';
  return undefined;
}

function holdersOf(attributes: Record<string, unknown> | undefined): Holder[] {
  const conns = attributes?.conns;
  if (!(conns instanceof Set) || !attributes) return [];
  const since = holderTimes(attributes);
  return [...(conns as Set<string>)].sort().map((connectionId) => ({
    connectionId,
    since: since[connectionId],
  }));
}

/** Names one transition of one entry: its reference and the revision it had before it. */
function transition(
  ref: { namespace?: string; name?: string } | undefined,
  revision: unknown,
  what: string,
): string {
  return `${ref?.namespace}/${ref?.name}@${String(revision ?? 'new')}:${what}`;
}

/** Index items with the time each is due for a liveness check. */
async function* withDueTime(
  items: AsyncIterable<Item>,
  dueAfterMs: number,
): AsyncIterable<{ item: Item; dueAt: EpochMillis }> {
  for await (const item of items) yield { item, dueAt: Number(item.sweepAt) + dueAfterMs };
}
