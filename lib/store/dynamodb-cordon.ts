import { randomUUID } from 'node:crypto';
import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { cordonedEvent, uncordonedEvent } from '../domain/entry-events.ts';
import { MAX_CORDON_MESSAGE } from '../domain/entry-record.ts';
import { InvalidRequestError } from '../domain/errors.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type {
  CordonOutcome,
  CordonStore,
  UncordonOutcome,
} from '../registration/entry-event-store.ts';
import { DynamoDbEntryEvents, withEntryEvent } from './dynamodb-entry-events.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { decodeEntry, entryKey } from './item-codec.ts';

/**
 * `registrar cordon`: the entry's `cordon` attribute ({at, message, id}), set and removed by
 * one conditional write each, with its event in the same write. Nothing else of the entry is
 * touched, so the writes commute with every other writer:
 * - a connect (a rotation, a reconnect) never sets or removes `cordon`: a cordon survives it,
 *   whichever lands first;
 * - a health report sets the agent's health beside it, never the cordon: one that races a
 *   cordon or an uncordon cannot put the entry back into traffic or keep it out;
 * - a sweep delete is conditional on the revision it read, which these bump: a cordon that
 *   lands after the read makes the delete wait for the next run (which deletes it if due).
 * A retry of an applied write (the SDK after a lost response) fails its condition and reads
 * the entry: its own `id` (cordon) or `uncordonedAt` (uncordon) tells it that it landed.
 */
export class DynamoDbCordon implements CordonStore {
  readonly #table: RegistryTable;
  readonly #events: DynamoDbEntryEvents;

  constructor(table: RegistryTable) {
    this.#table = table;
    this.#events = new DynamoDbEntryEvents(table);
  }

  async cordon(ref: ObjectRef, message: string, at: EpochMillis): Promise<CordonOutcome> {
    if (message.trim() === '' || message.length > MAX_CORDON_MESSAGE) {
      throw new InvalidRequestError(
        `cordon message of ${message.length} characters: must be 1 to ${MAX_CORDON_MESSAGE} (it becomes the Healthy condition's message)`,
        'message',
      );
    }
    const id = randomUUID();
    const output = await this.#table.tryUpdate(
      cordonUpdate(this.#table.name, ref, message, at, id),
    );
    if (output?.Attributes) {
      await this.#events.trimAfter(ref, output.Attributes, 'new').catch(() => undefined);
      return { outcome: 'cordoned', record: decodeEntry(output.Attributes) };
    }
    const item = await this.#table.getEntryItem(ref);
    if (!item) return { outcome: 'not-found' };
    return {
      outcome: item.cordon?.id === id ? 'cordoned' : 'already-cordoned',
      record: decodeEntry(item),
    };
  }

  async uncordon(ref: ObjectRef, at: EpochMillis): Promise<UncordonOutcome> {
    const output = await this.#table.tryUpdate(uncordonUpdate(this.#table.name, ref, at));
    if (output?.Attributes) {
      await this.#events.trimAfter(ref, output.Attributes, 'new').catch(() => undefined);
      return { outcome: 'uncordoned', record: decodeEntry(output.Attributes) };
    }
    const item = await this.#table.getEntryItem(ref);
    if (!item) return { outcome: 'not-found' };
    const mine = item.cordon === undefined && item.uncordonedAt === at;
    return { outcome: mine ? 'uncordoned' : 'not-cordoned', record: decodeEntry(item) };
  }
}

/** Out of traffic: only an entry that exists and is not cordoned yet (the first message stays). */
export function cordonUpdate(
  tableName: string,
  ref: ObjectRef,
  message: string,
  at: EpochMillis,
  id: string,
): UpdateCommandInput {
  return withEntryEvent(
    {
      TableName: tableName,
      Key: entryKey(ref),
      UpdateExpression: 'SET #cordon = :cordon REMOVE uncordonedAt ADD revision :one',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#cordon)',
      ExpressionAttributeNames: { '#cordon': 'cordon' },
      ExpressionAttributeValues: { ':cordon': { at, message, id }, ':one': 1 },
      ReturnValues: 'ALL_NEW',
    },
    cordonedEvent(at, message),
  );
}

/** Back into traffic: only an entry that is cordoned; `uncordonedAt` is when. */
export function uncordonUpdate(
  tableName: string,
  ref: ObjectRef,
  at: EpochMillis,
): UpdateCommandInput {
  return withEntryEvent(
    {
      TableName: tableName,
      Key: entryKey(ref),
      UpdateExpression: 'SET uncordonedAt = :at REMOVE #cordon ADD revision :one',
      ConditionExpression: 'attribute_exists(#cordon)',
      ExpressionAttributeNames: { '#cordon': 'cordon' },
      ExpressionAttributeValues: { ':at': at, ':one': 1 },
      ReturnValues: 'ALL_NEW',
    },
    uncordonedEvent(at),
  );
}
