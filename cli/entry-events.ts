import { type EntryRecord, isAutoRegistered } from '../lib/domain/entry-record.ts';
import { type EpochMillis, HEALTHY_CONDITION } from '../lib/domain/model.ts';
import { formatAge, formatTable, parseTimestamp } from './output.ts';

/**
 * The Events section of `describe we`, as kubectl shows a Pod's: what happened to the entry
 * and when, oldest first. The registry keeps no event log, so these are derived from what the
 * entry stores: its creation time, when each connection that holds it connected, when the last
 * one went away and how, and the Healthy condition's transition (its time and message). Only
 * the latest of each is known: a VM that flapped shows its last disconnect, not every one.
 */
export interface EntryEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  at: EpochMillis;
  message: string;
}

export function entryEvents(record: EntryRecord): EntryEvent[] {
  const events: EntryEvent[] = [];
  const auto = isAutoRegistered(record);
  const created = parseTimestamp(record.entry.metadata.creationTimestamp);
  if (created !== undefined) {
    events.push({
      type: 'Normal',
      reason: auto ? 'Registered' : 'Applied',
      at: created,
      message: auto
        ? `created from WorkloadGroup ${record.autoRegistrationGroup} when its VM first connected`
        : 'created by registrar apply (hand-made)',
    });
  }
  const connection = record.connection;
  const holders = Object.entries(connection?.holderSince ?? {});
  for (const [id, since] of holders) {
    events.push({
      type: 'Normal',
      reason: 'Connected',
      at: since,
      message: `connection ${id} connected`,
    });
  }
  if (
    connection?.connectedAt !== undefined &&
    !holders.some(([, since]) => since === connection.connectedAt)
  ) {
    events.push({
      type: 'Normal',
      reason: 'Connected',
      at: connection.connectedAt,
      message: 'the newest connection connected',
    });
  }
  if (connection?.disconnectedAt !== undefined) {
    const clean = connection.departure === 'clean';
    events.push({
      type: clean ? 'Normal' : 'Warning',
      reason: 'Disconnected',
      at: connection.disconnectedAt,
      message: clean
        ? 'the last connection closed cleanly (the agent stopped); swept after the grace period'
        : 'the last connection went away without a clean close (VM or network down, or a lost $disconnect); swept after the grace period',
    });
  }
  const health = record.health;
  if (health) {
    const draining = health.reason !== undefined;
    events.push({
      type: health.status === 'True' ? 'Normal' : 'Warning',
      reason:
        health.status === 'True'
          ? 'Healthy'
          : draining
            ? (health.reason ?? 'Unhealthy')
            : 'Unhealthy',
      at: health.lastTransitionTime,
      message:
        health.status === 'True'
          ? `${HEALTHY_CONDITION} turned True: the probe passed`
          : `${HEALTHY_CONDITION} turned False: ${health.message ?? (draining ? 'the agent is draining its VM' : 'the probe failed')}`,
    });
  }
  if (record.addressConflict) {
    events.push({
      type: 'Warning',
      reason: 'AddressInUse',
      at: record.addressConflict.at,
      message: `a connect that would register ${record.addressConflict.claimant} claimed this entry's address and was refused (an address is unique within a network)`,
    });
  }
  return events.sort((a, b) => a.at - b.at);
}

/** kubectl's layout: `Events:` then a table Type, Reason, Age, From, Message, or `<none>`. */
export function formatEvents(record: EntryRecord, now: EpochMillis): string {
  const events = entryEvents(record);
  if (events.length === 0) return 'Events:  <none>\n';
  const from = record.connection?.controller ?? 'registrar';
  const rows = events.map((event) => [
    event.type,
    event.reason,
    formatAge(event.at, now),
    from,
    event.message,
  ]);
  const table = formatTable(
    ['Type', 'Reason', 'Age', 'From', 'Message'],
    [['----', '------', '----', '----', '-------'], ...rows],
  );
  return `Events:\n${table.replace(/^/gm, '  ').replace(/ +$/gm, '')}`;
}
