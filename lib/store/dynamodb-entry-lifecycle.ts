import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DepartureKind } from '../domain/disruption.ts';
import {
  connectionClosedEvent,
  connectionsGoneEvent,
  connectionsSilentEvent,
  disconnectedEvent,
  type EntryEvent,
  reconnectedEvent,
} from '../domain/entry-events.ts';
import { legacyEvents } from '../domain/entry-history.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { HolderRef, StoredGroup } from '../domain/registry-records.ts';
import type {
  AddressClaim,
  ConnectChange,
  ConnectOutcome,
  EntryLifecycleStore,
  HealthOutcome,
  HealthReport,
  Holder,
  LeaveChange,
  LeaveResult,
} from '../registration/entry-lifecycle-store.ts';
import { addressConflictUpdate } from './dynamodb-address-conflict.ts';
import type { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import type { DynamoDbConnectionRecords } from './dynamodb-connection-records.ts';
import { DynamoDbEntryEvents } from './dynamodb-entry-events.ts';
import {
  type CleanExitGuard,
  cleanExitUpdate,
  connectAsNewest,
  connectAsOlder,
  leaveAsLast,
  leaveAsOneOfMany,
  tombstone,
} from './dynamodb-entry-writes.ts';
import { drainUpdate, healthUpdate } from './dynamodb-health-writes.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import {
  decodeEntry,
  decodeGroup,
  type EntryItem,
  entryKey,
  groupKey,
  holderTimes,
} from './item-codec.ts';

/**
 * Rounds of conditional writes before a connect or disconnect gives up. Each round re-reads
 * the entry; only a racing delete or another connection's write in between needs a second.
 */
const ROUNDS = 3;

/**
 * An auto-registered entry's life on the event path: connect, leave, liveness drops, health
 * and drain. Each event is one conditional write on the entry in the common case; a lost
 * condition is an outcome, and the entry is read only to tell which outcome.
 */
export class DynamoDbEntryLifecycle implements EntryLifecycleStore {
  readonly #table: RegistryTable;
  readonly #counters: DynamoDbCellCounters;
  readonly #connections: DynamoDbConnectionRecords;
  readonly #events: DynamoDbEntryEvents;

  constructor(
    table: RegistryTable,
    counters: DynamoDbCellCounters,
    connections: DynamoDbConnectionRecords,
  ) {
    this.#table = table;
    this.#counters = counters;
    this.#connections = connections;
    this.#events = new DynamoDbEntryEvents(table);
  }

  /** Consistent: groups are read-your-writes for operators (once `apply` returns, the next
   * connect uses the new template; once `delete wg` returns, connects to it are refused). */
  async getGroup(ref: ObjectRef): Promise<StoredGroup | undefined> {
    const item = await this.#table.get(groupKey(ref));
    return item ? decodeGroup(item) : undefined;
  }

  async getEntry(ref: ObjectRef): Promise<EntryRecord | undefined> {
    const item = await this.#table.getEntryItem(ref);
    return item ? decodeEntry(item) : undefined;
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
      await this.#connections.put({
        connectionId: change.connectionId,
        entry: ref,
        connectedAt: change.connectedAt,
      });
    }
    // A caller the template refuses may only join an entry that exists: no entry, no write.
    if (!change.mayCreate && !(await this.#table.getEntryItem(ref))) return 'forbidden';
    for (let round = 0; round < ROUNDS; round++) {
      const newest = await this.#table.tryUpdate(connectAsNewest(this.#table.name, change));
      if (newest) {
        await this.#counters.countConnect(newest.Attributes, change);
        await this.#recordReconnect(newest.Attributes, change);
        return newest.Attributes?.revision === undefined ? 'created' : 'reconnected';
      }
      if (await this.#table.tryUpdate(connectAsOlder(this.#table.name, change))) return 'joined';
      const existing = await this.#table.getEntryItem(ref);
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

  /**
   * A connect that brought a disconnected entry back records Reconnected (a rotation or a
   * join records nothing: the entry was connected). A write of its own, but only on that
   * transition (a VM back within the grace period). Guarded by the list's length the connect
   * saw, so the SDK's retry of an applied append adds nothing. Best effort: the connect stands.
   */
  async #recordReconnect(old: Record<string, unknown> | undefined, change: ConnectChange) {
    if (old?.revision === undefined || old.connectedAt !== undefined) return;
    const list = old.events;
    const length = Array.isArray(list) ? list.length : 0;
    const event = reconnectedEvent(
      change.connectedAt,
      change.connectionId,
      typeof old.disconnectedAt === 'number' ? old.disconnectedAt : undefined,
    );
    // An entry of a release without history: what its state said of its departure goes
    // first, since this connect removed that state.
    const before = legacyEvents(decodeEntry(old)).filter((e) => e.reason === 'Disconnected');
    await this.#events
      .append(change.entry.metadata, [...before, event], {
        condition:
          length === 0
            ? 'attribute_not_exists(#evList) OR size(#evList) = :seen'
            : 'size(#evList) = :seen',
        values: { ':seen': length },
      })
      .catch(() => false);
  }

  /** Takes back an entry this connect created, while it is still of the same origin. */
  async withdrawCreated(ref: ObjectRef, origin: string): Promise<void> {
    try {
      await this.#table.client.send(
        new DeleteCommand({
          TableName: this.#table.name,
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
    const table = this.#table.name;
    const departure = change.departure ?? 'abnormal';
    const { since } = change;
    const leaveLast = async (kind: DepartureKind, guard?: CleanExitGuard) => {
      const event = disconnectedEvent(at, connectionId, kind, guard?.newer === 'clean');
      const output = await this.#table.tryUpdate(
        leaveAsLast(table, entry, [connectionId], at, kind, guard, event),
      );
      if (!output) return undefined;
      await this.#counters.countLeave(output.Attributes, kind);
      await this.#trim(entry, output.Attributes, 'old');
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
    // A rotation's old connection leaving is routine (~12 a day per VM): no event. Any other
    // holder that closes while the entry stays held is worth one (a VM restarted, a crash).
    const closed = change.replaced ? undefined : connectionClosedEvent(at, connectionId, departure);
    const oneOfMany = async (): Promise<LeaveResult | undefined> => {
      const output = await this.#table.tryUpdate(
        leaveAsOneOfMany(table, entry, [connectionId], closed),
      );
      if (!output) return undefined;
      if (closed) await this.#trim(entry, output.Attributes, 'new');
      // A clean close that leaves holders behind, other than a rotation's old connection
      // (the VM lives on in the newer one): mark it for the holders left over.
      if (departure === 'clean' && !change.replaced && since !== undefined) {
        await this.#table.tryUpdate(cleanExitUpdate(table, entry, since));
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
        await this.#table.client.send(new UpdateCommand(tombstone(table, entry, connectionId)));
        return { outcome: 'not-holder' };
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
      }
      const existing = await this.#table.getEntryItem(entry);
      if (!existing?.autoRegistrationGroup) return { outcome: 'not-holder' };
    }
    throw new Error(
      `disconnect of ${connectionId} kept racing on ${entry.namespace}/${entry.name}`,
    );
  }

  /**
   * Drops holders that API Gateway says are gone (a liveness check, or a $disconnect's), or
   * that a liveness check found silent past their heartbeat (`silent`: why, for the event).
   */
  async dropHolders(
    entry: ObjectRef,
    gone: readonly string[],
    at: EpochMillis,
    silent?: { why: string },
  ): Promise<'disconnected' | 'still-held' | 'unchanged'> {
    for (let round = 0; round < ROUNDS; round++) {
      const item = await this.#table.getEntryItem(entry);
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
      const event = silent
        ? connectionsSilentEvent(at, dropping, last, silent.why)
        : connectionsGoneEvent(at, dropping, last, departure);
      const write = last
        ? leaveAsLast(
            this.#table.name,
            entry,
            dropping,
            at,
            departure,
            departure === 'clean' ? { since: newest, newer: 'clean' } : undefined,
            event,
          )
        : leaveAsOneOfMany(this.#table.name, entry, dropping, event);
      const output = await this.#table.tryUpdate(write);
      if (output) {
        if (last) await this.#counters.countLeave(output.Attributes, departure);
        await this.#trim(entry, output.Attributes, last ? 'old' : 'new');
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
    if (await this.#table.tryUpdate(healthUpdate(this.#table.name, report, 'refresh'))) {
      return 'refreshed';
    }
    const output = await this.#table.tryUpdate(
      healthUpdate(this.#table.name, report, 'transition'),
    );
    if (output) {
      await this.#trim(report.entry, output.Attributes, 'old');
      return 'transitioned';
    }
    const item = await this.#table.getEntryItem(report.entry);
    return item?.conns?.has(report.connectionId) ? 'superseded' : 'not-holder';
  }

  async drain(holder: HolderRef, at: EpochMillis): Promise<'draining' | 'not-holder'> {
    const first = await this.#table.tryUpdate(drainUpdate(this.#table.name, holder, at, true));
    if (first) {
      await this.#trim(holder.entry, first.Attributes, 'old');
      return 'draining';
    }
    // Draining already (a repeated drain), or not a holder.
    return (await this.#table.tryUpdate(drainUpdate(this.#table.name, holder, at)))
      ? 'draining'
      : 'not-holder';
  }

  /**
   * Records on the holder that another entry's claim of its address was refused: its own
   * attribute (`addressConflict`, the latest refused claim), never the `events` list. A claim
   * comes from whoever names the address, another namespace too: appended to the list, a
   * burst of refused connects would trim the holder's own events (Disconnected, Reconnected)
   * out of it. The condition, not a read before it, keeps it to one per interval: of many
   * concurrent refusals, only the first lands.
   */
  async noteAddressConflict(
    holder: ObjectRef,
    claim: AddressClaim,
    intervalMs: number,
  ): Promise<boolean> {
    const update = addressConflictUpdate(this.#table.name, holder, claim, intervalMs);
    return (await this.#table.tryUpdate(update)) !== undefined;
  }

  /** Records an event on an existing entry, in a write of its own (see DynamoDbEntryEvents). */
  recordEvent(ref: ObjectRef, event: EntryEvent): Promise<boolean> {
    return this.#events.append(ref, event);
  }

  /** Trims the entry's events after a write that appended one; best effort. */
  async #trim(
    ref: ObjectRef,
    attributes: Record<string, unknown> | undefined,
    returned: 'old' | 'new',
  ): Promise<void> {
    await this.#events.trimAfter(ref, attributes, returned).catch(() => undefined);
  }
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
