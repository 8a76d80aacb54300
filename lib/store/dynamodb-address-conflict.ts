import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { formatRef, type ObjectRef } from '../domain/model.ts';
import type { AddressClaim } from '../registration/entry-lifecycle-store.ts';
import { entryKey } from './item-codec.ts';

/**
 * The note a refused claim of an address leaves on the entry holding it (`addressConflict`:
 * when, and which entry's connect). Its own attribute of the entry item, never an element of
 * the entry's `events` list: whoever names the address makes the claim, another namespace
 * too, and the list is bounded (lib/domain/entry-events.ts), so notes appended there would
 * push the holder's own events out. Shown as an AddressInUse event (entry-history.ts).
 *
 * The update: the holder's `addressConflict` set to this claim, while the entry exists and its
 * last note is at least `intervalMs` older than the claim (or there is none). The condition,
 * not a read before the write, bounds a burst of concurrent refusals to one note.
 */
export function addressConflictUpdate(
  tableName: string,
  holder: ObjectRef,
  claim: AddressClaim,
  intervalMs: number,
): UpdateCommandInput {
  return {
    TableName: tableName,
    Key: entryKey(holder),
    UpdateExpression: 'SET addressConflict = :conflict',
    ConditionExpression:
      'attribute_exists(pk) AND (attribute_not_exists(addressConflict) OR addressConflict.#at <= :noteBefore)',
    ExpressionAttributeNames: { '#at': 'at' },
    ExpressionAttributeValues: {
      ':conflict': { at: claim.at, claimant: formatRef(claim.entry) },
      ':noteBefore': claim.at - intervalMs,
    },
  };
}
