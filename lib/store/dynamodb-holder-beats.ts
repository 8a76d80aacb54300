import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { EntryEvent } from '../domain/entry-events.ts';
import type { HolderBeat } from '../domain/holder-heartbeat.ts';
import type { HolderRef } from '../domain/registry-records.ts';
import type { HolderBeatStore } from '../registration/entry-lifecycle-store.ts';
import { DynamoDbEntryEvents, withEntryEvent } from './dynamodb-entry-events.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { beatAttribute, encodeBeat, entryKey } from './item-codec.ts';

/**
 * The heartbeat a holder acknowledged, recorded on its entry (`beat:<connection id>`): one
 * conditional write, only while the connection holds the entry (a late acknowledgement of a
 * connection that left, or whose entry was deleted, records nothing), with its
 * HeartbeatChanged event. Not a change of the entry's state: no revision bump, so no sweep
 * or connect racing it loses. An acknowledgement repeated (the agent's retry after a lost
 * reply) writes the same value again.
 */
export function heartbeatAckUpdate(
  tableName: string,
  holder: HolderRef,
  beat: HolderBeat,
  event: EntryEvent,
): UpdateCommandInput {
  return withEntryEvent(
    {
      TableName: tableName,
      Key: entryKey(holder.entry),
      UpdateExpression: 'SET #beat = :beat',
      ConditionExpression: 'contains(conns, :connection)',
      ExpressionAttributeNames: { '#beat': beatAttribute(holder.connectionId) },
      ExpressionAttributeValues: { ':beat': encodeBeat(beat), ':connection': holder.connectionId },
      // The events after the append: a list grown long is trimmed (DynamoDbEntryEvents).
      ReturnValues: 'UPDATED_NEW',
    },
    event,
  );
}

/** The holders' heartbeats as the message function writes them. */
export class DynamoDbHolderBeats implements HolderBeatStore {
  readonly #table: RegistryTable;
  readonly #events: DynamoDbEntryEvents;

  constructor(table: RegistryTable) {
    this.#table = table;
    this.#events = new DynamoDbEntryEvents(table);
  }

  async recordHeartbeat(
    holder: HolderRef,
    beat: HolderBeat,
    event: EntryEvent,
  ): Promise<'recorded' | 'not-holder'> {
    const written = await this.#table.tryUpdate(
      heartbeatAckUpdate(this.#table.name, holder, beat, event),
    );
    if (!written) return 'not-holder';
    // Best effort, as every append's trim: the acknowledgement stands either way.
    await this.#events.trimAfter(holder.entry, written.Attributes, 'new').catch(() => undefined);
    return 'recorded';
  }
}
