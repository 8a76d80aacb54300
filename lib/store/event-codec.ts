/**
 * An event as an element of the entry's `events` list (and of a history item's): `{t: time,
 * r: reason, m: message, w?: true when a Warning}`. Short names, because every byte of the
 * list is paid again on every later write of the entry. The component (kubectl's From)
 * follows from the reason, so it is not stored.
 */
import { type EntryEvent, reasonInfo } from '../domain/entry-events.ts';

/** The entry item's attributes: the list, and since when it is kept (see EntryRecord). */
export const EVENTS_ATTRIBUTE = 'events';
export const EVENTS_SINCE_ATTRIBUTE = 'eventsSince';

export interface StoredEvent {
  t: number;
  r: string;
  m: string;
  w?: true;
}

export function encodeEvent(event: EntryEvent): StoredEvent {
  const stored: StoredEvent = { t: event.at, r: event.reason, m: event.message };
  if (event.type === 'Warning') stored.w = true;
  return stored;
}

/** The stored list as events; elements a newer release shaped differently are skipped. */
export function decodeEvents(raw: unknown): EntryEvent[] {
  if (!Array.isArray(raw)) return [];
  const events: EntryEvent[] = [];
  for (const element of raw) {
    const stored = element as Partial<StoredEvent> | null;
    if (typeof stored?.t !== 'number' || typeof stored.r !== 'string') continue;
    events.push({
      type: stored.w ? 'Warning' : 'Normal',
      reason: stored.r,
      at: stored.t,
      message: typeof stored.m === 'string' ? stored.m : '',
      from: reasonInfo(stored.r).from,
    });
  }
  return events;
}
