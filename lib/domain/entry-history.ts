import { cellKey, type DisruptionRecord, zoneOf } from './disruption.ts';
import {
  addressInUseEvent,
  type EntryEvent,
  entryEvent,
  healthEvent,
  isRetained,
} from './entry-events.ts';
import { type EntryRecord, isAutoRegistered } from './entry-record.ts';
import type { EpochMillis } from './model.ts';

/**
 * What happened to an entry, oldest first: the events stored with it, and what its state says
 * of the time before they were recorded. Entries written by a release without event history
 * carry only state; theirs is derived as it always was (one of each kind: the latest connect,
 * disconnect, health transition and refused address claim). Once a release with history has
 * written the entry (`eventsSince`), only what it stored counts from then on, so nothing shows
 * twice. The creation (Registered, Applied) is always derived: it costs no byte to store. So
 * is the latest refused claim of its address (AddressInUse): it lives in a slot of its own
 * (`addressConflict`), apart from the list, so that claims by other namespaces never push the
 * entry's own events out (a copy an older release appended to the list shows once).
 */
export function entryHistory(record: EntryRecord, now: EpochMillis): EntryEvent[] {
  const since = record.eventsSince;
  const stored = record.events ?? [];
  // A stored copy of a derived event (legacyEvents, kept when a write overwrote its state)
  // shows once.
  const copied = new Set(stored.map((event) => `${event.reason}@${event.at}`));
  const derived = derivedEvents(record).filter(
    (event) =>
      !copied.has(`${event.reason}@${event.at}`) &&
      (ALWAYS_DERIVED.has(event.reason) || since === undefined || event.at < since),
  );
  return [...derived, ...stored]
    .filter((event) => isRetained(event, now))
    .sort((a, b) => a.at - b.at);
}

/**
 * What the state of an entry a release without history wrote says happened (but its creation):
 * a write that overwrites that state (a reconnect removes `disconnectedAt`) stores these first,
 * so the story of before the upgrade survives it.
 */
export function legacyEvents(record: EntryRecord): EntryEvent[] {
  if (record.eventsSince !== undefined) return [];
  return derivedEvents(record).filter((e) => !ALWAYS_DERIVED.has(e.reason));
}

/** Derived from state at every read, never stored in the list (see entryHistory). */
const ALWAYS_DERIVED: ReadonlySet<string> = new Set(['Registered', 'Applied', 'AddressInUse']);

function derivedEvents(record: EntryRecord): EntryEvent[] {
  const events: EntryEvent[] = [];
  const auto = isAutoRegistered(record);
  const created = Date.parse(record.entry.metadata.creationTimestamp ?? '');
  if (!Number.isNaN(created)) {
    events.push(
      auto
        ? entryEvent(
            'Registered',
            created,
            `created from WorkloadGroup ${record.autoRegistrationGroup} when its VM first connected`,
          )
        : entryEvent('Applied', created, 'created by registrar apply (hand-made)'),
    );
  }
  const connection = record.connection;
  const holders = Object.entries(connection?.holderSince ?? {});
  for (const [id, since] of holders) {
    events.push(entryEvent('Connected', since, `connection ${id} connected`));
  }
  if (
    connection?.connectedAt !== undefined &&
    !holders.some(([, since]) => since === connection.connectedAt)
  ) {
    events.push(entryEvent('Connected', connection.connectedAt, 'the newest connection connected'));
  }
  if (connection?.disconnectedAt !== undefined) {
    const clean = connection.departure === 'clean';
    events.push(
      entryEvent(
        'Disconnected',
        connection.disconnectedAt,
        clean
          ? 'the last connection closed cleanly (the agent stopped); swept after the grace period'
          : 'the last connection went away without a clean close (VM or network down, or a lost $disconnect); swept after the grace period',
        clean ? 'Normal' : 'Warning',
      ),
    );
  }
  const health = record.health;
  if (health) {
    const at = health.lastTransitionTime;
    events.push(
      health.reason !== undefined && health.status === 'False'
        ? entryEvent(
            'Draining',
            at,
            `Healthy turned False: ${health.message ?? 'the agent is draining its VM'}`,
          )
        : healthEvent(at, health.status === 'True', health.message),
    );
  }
  if (record.addressConflict) {
    events.push(addressInUseEvent(record.addressConflict.at, record.addressConflict.claimant));
  }
  return events;
}

/**
 * Fail static's decision about a departed entry, now: its deletion is held (every namespace,
 * or its own, is held) or slowed (its namespace's zone is disrupted). Derived at read from
 * the sweeper's record, never stored: a hold of 100,000 entries writes nothing per entry.
 * The history item of the deletion that follows says under which pacing it went.
 */
export function deletionHeldEvent(
  record: EntryRecord,
  disruption: DisruptionRecord | undefined,
  gracePeriodMs: number,
  now: EpochMillis,
): EntryEvent | undefined {
  const connection = record.connection;
  if (!disruption || !isAutoRegistered(record) || !connection) return undefined;
  const left = connection.disconnectedAt;
  // A clean departure is never held; a connected entry is not due.
  if (left === undefined || connection.departure === 'clean') return undefined;
  if (now - left < gracePeriodMs) return undefined;
  const { namespace } = record.entry.metadata;
  const cell = cellKey(namespace, zoneOf(record.entry.spec.locality));
  const held =
    disruption.mode === 'held' &&
    (disruption.heldNamespaces === undefined || disruption.heldNamespaces.includes(namespace));
  if (held) {
    return entryEvent(
      'DeletionHeld',
      Math.max(left + gracePeriodMs, disruption.holdSince ?? disruption.since),
      `fail static holds its deletion: ${disruption.heldNamespaces ? `namespace ${namespace} is` : 'every namespace is'} held (registrar sweep status; registrar sweep --force releases it)`,
    );
  }
  if (disruption.disruptedZones.includes(cell)) {
    const slowed = disruption.slowedSince?.[cell] ?? disruption.since;
    return entryEvent(
      'DeletionHeld',
      Math.max(left + gracePeriodMs, slowed),
      `fail static slows its deletion: too many of namespace ${namespace}'s entries in zone ${zoneOf(record.entry.spec.locality)} left abnormally at once (registrar sweep status)`,
    );
  }
  return undefined;
}
