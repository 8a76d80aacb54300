import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  cellKey,
  type DepartureKind,
  splitCell,
  type ZoneCount,
  zoneOf,
} from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { ConnectChange } from '../registration/entry-lifecycle-store.ts';
import type { DisruptionStore } from '../registration/sweep-store.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import { zoneCountUpdate } from './dynamodb-entry-writes.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import type { EntryItem, Item } from './item-codec.ts';
import { ZONE_SHARDS, zonePartition, zoneShardOf } from './table-definition.ts';

/** Fail static's cell counters, as the guard reads them: the part of DisruptionStore kept here. */
type ZoneCountStore = Pick<DisruptionStore, 'zoneCounts'>;

type Ref = { namespace?: string; name?: string } | undefined;
type CounterDelta = { connected?: number; away?: number; left?: number };

/**
 * Fail static's per-cell counters (`ZONE#<shard> / <namespace>#<region>/<zone>`:
 * `connected`, `away`, `left`), moved right after the entry write that changed an entry's state
 * (docs/architecture.md, "Fail static: how the disruption is counted"). Each move names the
 * transition it counts, so the SDK retrying an applied `ADD` counts it once.
 */
export class DynamoDbCellCounters implements ZoneCountStore {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  /** A connect that made the entry connected (new, or back after a departure). */
  async countConnect(old: Record<string, unknown> | undefined, change: ConnectChange) {
    if (old?.connectedAt !== undefined) return; // connected already: a rotation or a join
    const locality = old
      ? (old.entry as EntryItem['entry']).spec.locality
      : change.entry.spec.locality;
    const departed = old !== undefined && old.disconnectedAt !== undefined;
    const back = !departed ? {} : old.departure === 'clean' ? { left: -1 } : { away: -1 };
    await this.#count(
      change.entry.metadata,
      zoneOf(locality),
      { connected: 1, ...back },
      transition(change.entry.metadata, old?.revision, `connect:${change.connectionId}`),
    );
  }

  /** The last holder left: one fewer connected, one more away (abnormal) or left (clean). */
  async countLeave(old: Record<string, unknown> | undefined, departure: DepartureKind) {
    const entry = old?.entry as EntryItem['entry'] | undefined;
    await this.#count(
      entry?.metadata,
      zoneOf(entry?.spec.locality),
      { connected: -1, ...(departure === 'abnormal' ? { away: 1 } : { left: 1 }) },
      transition(entry?.metadata, old?.revision, 'leave'),
    );
  }

  /** The entry was deleted (`why`: swept, instance-gone): its part leaves its cell. */
  async countRemoval(record: EntryRecord, why: string) {
    await this.#count(
      record.entry.metadata,
      zoneOf(record.entry.spec.locality),
      removalDelta(record),
      transition(record.entry.metadata, record.revision, why),
    );
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
        const query = queryItems(this.#table.client, {
          TableName: this.#table.name,
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
      const total = totals.get(key) ?? { ...cell, connected: 0, away: 0, left: 0 };
      total.connected += typeof item.connected === 'number' ? item.connected : 0;
      total.away += typeof item.away === 'number' ? item.away : 0;
      total.left = (total.left ?? 0) + (typeof item.left === 'number' ? item.left : 0);
      totals.set(key, total);
    }
    return [...totals.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, count]) => count);
  }

  /**
   * Moves the counters of the entry's cell (its namespace in its zone) in the entry's shard.
   * `op` names the transition (entry and its revision before it): see zoneCountUpdate.
   */
  async #count(ref: Ref, zone: string, delta: CounterDelta, op: string) {
    const cell = cellKey(ref?.namespace ?? '', zone);
    const update = zoneCountUpdate(this.#table.name, cell, zoneShardOf(ref), delta, op);
    if (!update) return;
    try {
      await this.#table.client.send(new UpdateCommand(update));
    } catch (error) {
      // Our own earlier attempt was applied (its response was lost): counted already.
      if (!isConditionFailed(error)) throw error;
    }
  }
}

/** What removing an entry takes off its cell's counters: its part in one of them. */
function removalDelta(record: EntryRecord): CounterDelta {
  const connection = record.connection;
  if (!connection) return {};
  if (connection.connectedAt !== undefined) return { connected: -1 };
  if (connection.disconnectedAt === undefined) return {};
  return connection.departure === 'clean' ? { left: -1 } : { away: -1 };
}

/** Names one transition of one entry: its reference and the revision it had before it. */
function transition(ref: Ref, revision: unknown, what: string): string {
  return `${ref?.namespace}/${ref?.name}@${String(revision ?? 'new')}:${what}`;
}
