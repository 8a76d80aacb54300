import type { DisruptionRecord } from '../domain/disruption.ts';
import type { EntryEvent } from '../domain/entry-events.ts';
import { deletionHeldEvent, entryHistory } from '../domain/entry-history.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis } from '../domain/model.ts';
import { formatAge, formatTable } from './output.ts';

/**
 * An entry's events as `describe` and `get events` show them: what it stores (and, for an
 * entry a release without event history wrote, what its state says: entry-history.ts), plus
 * fail static's hold of its deletion when there is one now (derived, never stored).
 */
export function eventsOf(
  record: EntryRecord,
  now: EpochMillis,
  sweep?: { disruption: DisruptionRecord | undefined; gracePeriodMs: number | undefined },
): EntryEvent[] {
  const events = entryHistory(record, now);
  const grace = sweep?.gracePeriodMs;
  const held =
    grace === undefined ? undefined : deletionHeldEvent(record, sweep?.disruption, grace, now);
  if (held) events.push(held);
  return events;
}

/** kubectl's layout: `Events:` then a table Type, Reason, Age, From, Message, or `<none>`. */
export function formatEvents(events: readonly EntryEvent[], now: EpochMillis): string {
  if (events.length === 0) return 'Events:  <none>\n';
  const rows = events.map((event) => [
    event.type,
    event.reason,
    formatAge(event.at, now),
    event.from,
    event.message,
  ]);
  const table = formatTable(
    ['Type', 'Reason', 'Age', 'From', 'Message'],
    [['----', '------', '----', '----', '-------'], ...rows],
  );
  return `Events:\n${table.replace(/^/gm, '  ').replace(/ +$/gm, '')}`;
}
