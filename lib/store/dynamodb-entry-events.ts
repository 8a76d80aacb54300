/**
 * An entry's events, stored in the entry's own item (attribute `events`, a list, oldest
 * first) and appended by the conditional write that changes the entry's state: an event
 * costs no request of its own, only its bytes (~75-100 each; DynamoDB bills a write by the
 * item's whole size, so the list is kept short: lib/domain/entry-events.ts, docs/cost.md).
 *
 * Each element's shape: lib/store/event-codec.ts.
 *
 * The list is trimmed by a write of its own when an appending write returns it at
 * EVENTS_TRIM_AT or longer: `REMOVE events[k-1], ..., events[0]` conditional on the length it
 * saw, so an append that lands in between makes the trim wait for the next event, and two
 * trims never both remove. (Indexes go in descending order: DynamoDB removes them as of the
 * original list; dynalite one after the other, which descending order makes the same.)
 */
import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { type EntryEvent, EVENTS_KEPT, EVENTS_TRIM_AT } from '../domain/entry-events.ts';
import type { ObjectRef } from '../domain/model.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { EVENTS_ATTRIBUTE, EVENTS_SINCE_ATTRIBUTE, encodeEvent } from './event-codec.ts';
import { entryKey } from './item-codec.ts';

/**
 * Adds the append of `event` to a conditional write of the entry: the event lands if and only
 * if the write does (its condition is the rule's), and costs no request of its own. Also marks
 * since when the entry's events are kept (`eventsSince`, set once). For any write of an entry
 * item that has an UpdateExpression; the rollout of a group's template uses it for
 * TemplateUpdated (templateRolledOutEvent).
 */
export function withEntryEvent(
  input: UpdateCommandInput,
  event: EntryEvent | readonly EntryEvent[],
): UpdateCommandInput {
  const events = Array.isArray(event) ? event : [event as EntryEvent];
  const clauses =
    `#evList = list_append(if_not_exists(#evList, :evNone), :evNew),` +
    ` ${EVENTS_SINCE_ATTRIBUTE} = if_not_exists(${EVENTS_SINCE_ATTRIBUTE}, :evAt)`;
  const expression = input.UpdateExpression ?? '';
  // The SET keyword starts a clause: at the start or after a space, in capitals as this
  // code writes it (never a placeholder such as `:set`, which follows a colon).
  const set = /(?:^|\s)SET\s+/.exec(expression);
  const at = set ? set.index + set[0].length : -1;
  const UpdateExpression = set
    ? `${expression.slice(0, at)}${clauses}, ${expression.slice(at)}`
    : `SET ${clauses} ${expression}`.trimEnd();
  return {
    ...input,
    UpdateExpression,
    ExpressionAttributeNames: { ...input.ExpressionAttributeNames, '#evList': EVENTS_ATTRIBUTE },
    ExpressionAttributeValues: {
      ...input.ExpressionAttributeValues,
      ':evNone': [],
      ':evNew': events.map(encodeEvent),
      ':evAt': events[0]?.at,
    },
  };
}

/**
 * How long the list is after a write, from what it returned: `old` values (ALL_OLD,
 * UPDATED_OLD) hold the list before this write's append, `new` ones (ALL_NEW, UPDATED_NEW)
 * after it. Undefined when the write returned no list.
 */
export function eventCountAfter(
  attributes: Record<string, unknown> | undefined,
  returned: 'old' | 'new',
): number | undefined {
  const list = attributes?.[EVENTS_ATTRIBUTE];
  if (!Array.isArray(list)) return returned === 'old' && attributes ? 1 : undefined;
  return returned === 'old' ? list.length + 1 : list.length;
}

/** Removes the oldest events down to EVENTS_KEPT, only while the list is `length` long. */
export function trimUpdate(tableName: string, ref: ObjectRef, length: number): UpdateCommandInput {
  const removed = Math.max(0, length - EVENTS_KEPT);
  const paths = Array.from({ length: removed }, (_, i) => `#evList[${removed - 1 - i}]`);
  return {
    TableName: tableName,
    Key: entryKey(ref),
    UpdateExpression: `REMOVE ${paths.join(', ')}`,
    ConditionExpression: 'size(#evList) = :length',
    ExpressionAttributeNames: { '#evList': EVENTS_ATTRIBUTE },
    ExpressionAttributeValues: { ':length': length },
  };
}

/**
 * Appends events outside a state write (the Reconnected event, the rollout's own use) and
 * trims lists that grew long. Best effort: the state change stands whether or not its event
 * is recorded, so a failure here is swallowed by the callers that say so.
 */
export class DynamoDbEntryEvents {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  /**
   * One write: appends the event to an existing entry. With `onlyIf`, only while that
   * condition holds (the caller's guard against recording an event twice).
   */
  async append(
    ref: ObjectRef,
    event: EntryEvent | readonly EntryEvent[],
    onlyIf?: { condition: string; values: Record<string, unknown> },
  ): Promise<boolean> {
    const output = await this.#table.tryUpdate(
      withEntryEvent(
        {
          TableName: this.#table.name,
          Key: entryKey(ref),
          UpdateExpression: '',
          ConditionExpression: `attribute_exists(pk)${onlyIf ? ` AND (${onlyIf.condition})` : ''}`,
          ...(onlyIf && Object.keys(onlyIf.values).length > 0
            ? { ExpressionAttributeValues: onlyIf.values }
            : {}),
          ReturnValues: 'UPDATED_NEW',
        },
        event,
      ),
    );
    if (!output) return false;
    await this.trimAfter(ref, output.Attributes, 'new');
    return true;
  }

  /** After a write that appended an event: trims when the list reached EVENTS_TRIM_AT. */
  async trimAfter(
    ref: ObjectRef,
    attributes: Record<string, unknown> | undefined,
    returned: 'old' | 'new',
  ): Promise<void> {
    const length = eventCountAfter(attributes, returned);
    if (length === undefined || length < EVENTS_TRIM_AT) return;
    await this.#table.tryUpdate(trimUpdate(this.#table.name, ref, length));
  }
}
