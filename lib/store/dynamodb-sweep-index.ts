import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { type DeletionCause, deletedEvent } from '../domain/entry-events.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { mergeOrdered } from '../domain/merge-ordered.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { EntryDeletion } from '../domain/registry-records.ts';
import type { LivenessWindow, SweepCutoffs } from '../domain/sweep-policy.ts';
import type { SweepIndexState, SweepIndexStore } from '../registration/sweep-store.ts';
import type { DynamoDbCellCounters } from './dynamodb-cell-counters.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import { isolated } from './dynamodb-departure-queues.ts';
import type { DynamoDbEntryHistory } from './dynamodb-entry-history.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { decodeEntry, encodeEntry, entryKey, type Item, sweepState } from './item-codec.ts';
import { SWEEP_INDEX, SWEEP_SHARDS } from './table-definition.ts';

/**
 * The sparse sweep index's keys shared by every namespace (`sweepState` = `C#<shard>`, and
 * 0.1.0's `D#<shard>` and `L#<shard>`; `sweepAt`): the liveness checks' and the stale rule's
 * reads, the departures an earlier release wrote, and the sweeper's conditional delete. Each
 * namespace's own departures are read by DynamoDbDepartureQueues.
 */
export class DynamoDbSweepIndex implements SweepIndexStore {
  readonly #table: RegistryTable;
  readonly #counters: DynamoDbCellCounters;
  readonly #history: DynamoDbEntryHistory;

  constructor(table: RegistryTable, counters: DynamoDbCellCounters, history: DynamoDbEntryHistory) {
    this.#table = table;
    this.#counters = counters;
    this.#history = history;
  }

  /**
   * Queries the index keys shared by every namespace, shard by shard: 0.1.0's departures
   * (`L#`, `D#`) with `sweepAt <= disconnectedAtOrBefore`, connected entries (`C#`) with
   * `sweepAt < connectedBefore` (stale). It reads only entries that are due, never the table.
   * The index is eventually consistent: the sweeper re-checks each record and its delete is
   * conditional on the revision read.
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
    let remaining = limit;
    for (const range of ranges) {
      for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
        const items = isolated(
          queryItems(
            this.#table.client,
            {
              TableName: this.#table.name,
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

  /**
   * Connected entries (state C, keyed by their newest connect) in the liveness windows, in
   * due-time order (newest connect + the window's `dueAfterMs`): one query stream per window
   * and shard, merged, each read a page at a time. A run that stops early has then checked
   * exactly the entries due before some time, and the next run starts there.
   *
   * A shard is queried only in the windows that overlap the connects it holds: its oldest and
   * newest `sweepAt` (one item from each end) come first. The windows span 1.5 x the maximum
   * connection age in liveness intervals (36 at the defaults, up to 360), and a fleet's
   * connects span at most the maximum age, often far less: an idle local runtime with a 1 s
   * sweep sent 720 Queries a second for an empty table. Only a connect whose write lands more
   * than a liveness interval after its `connectedAt` can fall in a window, and one that lands
   * after the bounds were read is missed as one landing after its window's query always was:
   * its check comes one interval later (the next window it is due in). A reconnect moves an
   * entry out of every window; a shard's ends that cannot be read make every window be read.
   */
  async *connectedIn(
    windows: readonly LivenessWindow[],
    limit: number,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<EntryRecord> {
    const streams = Array.from({ length: SWEEP_SHARDS }, (_, shard) =>
      this.#connectedInShard(windows, shard, onReadFailure),
    );
    let remaining = limit;
    for await (const { item } of mergeOrdered(streams, (entry) => entry.dueAt)) {
      if (remaining-- <= 0) return;
      yield decodeEntry(item);
    }
  }

  /**
   * Deletes the entry only at the revision the sweeper read: a reconnect (or a health report)
   * that landed after the read bumped it, and the entry stays. A condition that fails because
   * the entry is gone is the SDK retrying this delete after a lost response (or an operator
   * deleting it too): the entry is deleted either way.
   *
   * The deleted entry's events, and why it went, are kept in a history item (one more write;
   * dynamodb-entry-history.ts). Without `deletion`, the sweeper's reason read from the record,
   * at the time of the call.
   */
  async deleteSwept(
    record: EntryRecord,
    deletion?: EntryDeletion,
  ): Promise<'deleted' | 'conflict'> {
    let old: Item | undefined;
    try {
      const output = await this.#table.client.send(
        new DeleteCommand({
          TableName: this.#table.name,
          Key: entryKey(record.entry.metadata),
          ConditionExpression: 'revision = :revision',
          ExpressionAttributeValues: { ':revision': record.revision },
          ReturnValues: 'ALL_OLD',
        }),
      );
      old = output.Attributes;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      if (await this.#table.getEntryItem(record.entry.metadata)) return 'conflict';
    }
    // Also when the entry was gone already (a retried delete, or an operator's delete, which
    // counts nothing): the counters follow the entries either way.
    await this.#counters.countRemoval(record, 'swept');
    // The state the delete was conditional on, when the retried delete returned none.
    const cause = deletion?.cause ?? sweptCause(record);
    await this.#history.recordDeletion(
      old ?? encodeEntry(record),
      deletedEvent(deletion?.at ?? Date.now(), cause, deletion?.note),
    );
    return 'deleted';
  }

  /** `connectedIn`'s stream of one shard, its windows merged in due-time order. */
  async *#connectedInShard(
    windows: readonly LivenessWindow[],
    shard: number,
    onReadFailure?: (error: unknown) => void,
  ): AsyncIterable<{ item: Item; dueAt: EpochMillis }> {
    if (windows.length === 0) return;
    // Without the bounds (a failed read) every window is read, as before they were known.
    const span = await this.#connectedSpan(shard).catch(() => 'unknown' as const);
    if (span === undefined) return;
    const overlapping =
      span === 'unknown'
        ? windows
        : windows.filter((window) => window.to > span.oldest && window.from <= span.newest);
    const streams = overlapping.map((window) =>
      withDueTime(
        isolated(
          queryItems(this.#table.client, {
            TableName: this.#table.name,
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
        ),
        window.dueAfterMs ?? 0,
      ),
    );
    yield* mergeOrdered(streams, (entry) => entry.dueAt);
  }

  /** The oldest and newest connect a shard holds (undefined: none): two one-item Queries. */
  async #connectedSpan(
    shard: number,
  ): Promise<{ oldest: EpochMillis; newest: EpochMillis } | undefined> {
    const [oldest, newest] = await Promise.all([
      this.#connectEnd(shard, 'oldest'),
      this.#connectEnd(shard, 'newest'),
    ]);
    return oldest === undefined || newest === undefined ? undefined : { oldest, newest };
  }

  /** One item from the newest end of each connected shard: O(shards), never O(entries). */
  async newestConnectAt(): Promise<EpochMillis | undefined> {
    let newest: EpochMillis | undefined;
    for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
      const at = await this.#connectEnd(shard, 'newest');
      if (at !== undefined && (newest === undefined || at > newest)) newest = at;
    }
    return newest;
  }

  /** The `sweepAt` at one end of a connected shard: one one-item Query; undefined if empty. */
  async #connectEnd(shard: number, end: 'oldest' | 'newest'): Promise<EpochMillis | undefined> {
    const items = queryItems(
      this.#table.client,
      {
        TableName: this.#table.name,
        IndexName: SWEEP_INDEX.name,
        KeyConditionExpression: 'sweepState = :state',
        ExpressionAttributeValues: { ':state': sweepState('C', shard) },
        ScanIndexForward: end === 'oldest',
        ProjectionExpression: 'sweepAt',
      },
      1,
    );
    for await (const item of items) {
      if (typeof item.sweepAt === 'number') return item.sweepAt;
    }
    return undefined;
  }
}

/** Index items with the time each is due for a liveness check. */
async function* withDueTime(
  items: AsyncIterable<Item>,
  dueAfterMs: number,
): AsyncIterable<{ item: Item; dueAt: EpochMillis }> {
  for await (const item of items) yield { item, dueAt: Number(item.sweepAt) + dueAfterMs };
}

/** The sweeper's rule that made the entry due: stale while marked connected, else grace. */
function sweptCause(record: EntryRecord): DeletionCause {
  const connection = record.connection;
  return connection?.connectedAt !== undefined
    ? { kind: 'stale', connectedAt: connection.connectedAt }
    : { kind: 'swept', departure: connection?.departure };
}
