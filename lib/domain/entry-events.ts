import type { DepartureKind } from './disruption.ts';
import type { EpochMillis } from './model.ts';

/**
 * An entry's event history: what happened to it, when, and why, kept as kubectl keeps a Pod's
 * events (Type, Reason, Age, From, Message). Pure: times are arguments.
 *
 * Bounds (docs/architecture.md, "Event history"): an entry carries at most EVENTS_TRIM_AT
 * events in its own item, written by the same conditional write that changes its state; a
 * write that finds the list that long trims it to the newest EVENTS_KEPT. Events older than
 * EVENT_RETENTION_MS are not shown. When the entry is deleted, its events and the deletion go
 * into a history item that outlives it by EVENT_RETENTION_MS (TTL).
 */

export type EventType = 'Normal' | 'Warning';

/** One event of one entry, as shown. */
export interface EntryEvent {
  type: EventType;
  reason: string;
  at: EpochMillis;
  message: string;
  /** The component that recorded it (kubectl's From): connect, sweeper, operator, ... */
  from: string;
}

/** The newest events an entry keeps after a trim. */
export const EVENTS_KEPT = 10;
/** A write that leaves the entry with this many events trims it to EVENTS_KEPT. */
export const EVENTS_TRIM_AT = 15;
/** Events are shown for 7 days; a deleted entry's history item expires 7 days after it went. */
export const EVENT_RETENTION_MS = 7 * 24 * 3_600_000;
/**
 * A message is cut to this many characters: an agent's health message may be 1,024, and every
 * byte of the list is paid on every write of the entry (DynamoDB bills an item's whole size).
 */
export const EVENT_MESSAGE_MAX = 200;

/**
 * Every reason the registrar records, its component and its default type. A reason an older
 * release does not know is shown as Normal, from `registrar`.
 */
export const EVENT_REASONS = {
  /** Derived from the entry's creation time (never stored: costs nothing). */
  Registered: { from: 'connect', type: 'Normal' },
  /** Derived from a hand-made entry's creation time. */
  Applied: { from: 'operator', type: 'Normal' },
  /** A hand-made entry's document changed (`registrar apply`). */
  Updated: { from: 'operator', type: 'Normal' },
  /** Derived, for entries written before events were recorded: when a holder connected. */
  Connected: { from: 'connect', type: 'Normal' },
  /** A connect made a disconnected entry connected again (a VM back within the grace period). */
  Reconnected: { from: 'connect', type: 'Normal' },
  /** One holder closed while others still hold the entry (not a rotation's old connection). */
  ConnectionClosed: { from: 'disconnect', type: 'Normal' },
  /** The last holder closed: the entry is disconnected. */
  Disconnected: { from: 'disconnect', type: 'Normal' },
  /** A liveness check found holders gone without a `$disconnect` (API Gateway said 410). */
  ConnectionsGone: { from: 'liveness', type: 'Warning' },
  /** A liveness check found holders open but silent past the heartbeat's bound: closed. */
  Silent: { from: 'liveness', type: 'Warning' },
  Healthy: { from: 'agent', type: 'Normal' },
  Unhealthy: { from: 'agent', type: 'Warning' },
  /** The agent said its VM is shutting down. */
  Draining: { from: 'agent', type: 'Normal' },
  Cordoned: { from: 'operator', type: 'Warning' },
  Uncordoned: { from: 'operator', type: 'Normal' },
  /** Another entry's connect claimed this entry's address and was refused. */
  AddressInUse: { from: 'connect', type: 'Warning' },
  /**
   * A holder's agent acknowledged its group's changed heartbeat: it is held to the new bound
   * from then on (issue 44).
   */
  HeartbeatChanged: { from: 'agent', type: 'Normal' },
  /** A group's template change reached the entry (the rollout; see templateRolledOutEvent). */
  TemplateUpdated: { from: 'rollout', type: 'Normal' },
  /** Deleted by the sweeper after the grace period. */
  Swept: { from: 'sweeper', type: 'Normal' },
  /** Deleted by the sweeper: still marked connected 1.5 x the maximum age after its connect. */
  SweptStale: { from: 'sweeper', type: 'Warning' },
  /** Deleted because EC2 said its instance is shutting down or terminated. */
  InstanceGone: { from: 'ec2', type: 'Normal' },
  /** Deleted by an operator (`registrar delete`). */
  Deleted: { from: 'operator', type: 'Normal' },
  /** Deleted so another entry could take its address (a VM that moved groups, an EC2 reuse). */
  Replaced: { from: 'connect', type: 'Normal' },
  /** Derived: fail static holds or slows its deletion now (never stored). */
  DeletionHeld: { from: 'sweeper', type: 'Warning' },
} as const satisfies Record<string, { from: string; type: EventType }>;

export type EventReason = keyof typeof EVENT_REASONS;

/** An event to record: the reason's component and type are filled in. */
export function entryEvent(
  reason: EventReason,
  at: EpochMillis,
  message: string,
  type: EventType = EVENT_REASONS[reason].type,
): EntryEvent {
  return { type, reason, at, message: clip(message), from: EVENT_REASONS[reason].from };
}

/** The component and type of a stored reason, also one a newer release wrote. */
export function reasonInfo(reason: string): { from: string; type: EventType } {
  return Object.hasOwn(EVENT_REASONS, reason)
    ? EVENT_REASONS[reason as EventReason]
    : { from: 'registrar', type: 'Normal' };
}

function clip(message: string): string {
  return message.length <= EVENT_MESSAGE_MAX
    ? message
    : `${message.slice(0, EVENT_MESSAGE_MAX - 1)}…`;
}

/** Whether an event is still shown (EVENT_RETENTION_MS). */
export function isRetained(event: { at: EpochMillis }, now: EpochMillis): boolean {
  return now - event.at <= EVENT_RETENTION_MS;
}

// The events of the lifecycle, in the words an operator reads.

export function reconnectedEvent(
  at: EpochMillis,
  connectionId: string,
  disconnectedAt: EpochMillis | undefined,
): EntryEvent {
  const since =
    disconnectedAt === undefined
      ? ''
      : ` (disconnected since ${new Date(disconnectedAt).toISOString()})`;
  return entryEvent(
    'Reconnected',
    at,
    `connection ${connectionId} connected: back in the mesh${since}`,
  );
}

/**
 * `leftover`: the last holder was a connection left over from a lost `$disconnect`, after the
 * VM's newest connection had closed cleanly: the departure is clean (CleanExitGuard).
 */
export function disconnectedEvent(
  at: EpochMillis,
  connectionId: string,
  departure: DepartureKind,
  leftover = false,
): EntryEvent {
  if (leftover) {
    return entryEvent(
      'Disconnected',
      at,
      `the last connection ${connectionId}, a leftover of a lost $disconnect, went away after the VM's newest connection had closed cleanly; deleted after the grace period unless it reconnects`,
    );
  }
  return departure === 'clean'
    ? entryEvent(
        'Disconnected',
        at,
        `the last connection ${connectionId} closed cleanly (the agent stopped); deleted after the grace period unless it reconnects`,
      )
    : entryEvent(
        'Disconnected',
        at,
        `the last connection ${connectionId} went away without a clean close (VM or network down); deleted after the grace period unless it reconnects`,
        'Warning',
      );
}

export function connectionClosedEvent(
  at: EpochMillis,
  connectionId: string,
  departure: DepartureKind,
): EntryEvent {
  return entryEvent(
    'ConnectionClosed',
    at,
    `connection ${connectionId} closed ${departure === 'clean' ? 'cleanly' : 'without a clean close'}; another connection still holds the entry`,
    departure === 'clean' ? 'Normal' : 'Warning',
  );
}

export function connectionsGoneEvent(
  at: EpochMillis,
  connectionIds: readonly string[],
  last: boolean,
  departure: DepartureKind = 'abnormal',
): EntryEvent {
  const which = connectionIds.join(', ');
  const after =
    departure === 'clean' ? ' (after the VM had stopped cleanly: a clean departure)' : '';
  return entryEvent(
    'ConnectionsGone',
    at,
    `API Gateway says connection ${which} is gone, and no $disconnect came for it; ${last ? `no connection holds the entry: disconnected${after}` : 'another connection still holds the entry'}`,
    last && departure === 'abnormal' ? 'Warning' : 'Normal',
  );
}

/** Holders open but silent past the heartbeat's bound (hung VM, cut network, frozen agent). */
export function connectionsSilentEvent(
  at: EpochMillis,
  connectionIds: readonly string[],
  last: boolean,
  why: string,
): EntryEvent {
  return entryEvent(
    'Silent',
    at,
    `connection ${connectionIds.join(', ')} ${why}: closed; ${last ? 'no connection holds the entry: disconnected, not routable' : 'another connection still holds the entry'}`,
    last ? 'Warning' : 'Normal',
  );
}

export function healthEvent(at: EpochMillis, healthy: boolean, message?: string): EntryEvent {
  return healthy
    ? entryEvent('Healthy', at, 'Healthy turned True: the probe passed')
    : entryEvent('Unhealthy', at, `Healthy turned False: ${message ?? 'the probe failed'}`);
}

export function drainingEvent(at: EpochMillis): EntryEvent {
  return entryEvent(
    'Draining',
    at,
    'the agent is stopping its VM: Healthy False (Draining) until its connection closes',
  );
}

export function cordonedEvent(at: EpochMillis, message: string): EntryEvent {
  return entryEvent(
    'Cordoned',
    at,
    `taken out of traffic (Healthy False, Maintenance): ${message}`,
  );
}

export function uncordonedEvent(at: EpochMillis): EntryEvent {
  return entryEvent(
    'Uncordoned',
    at,
    "put back into traffic: Healthy follows the agent's probe again",
  );
}

export function addressInUseEvent(at: EpochMillis, claimant: string): EntryEvent {
  return entryEvent(
    'AddressInUse',
    at,
    `a connect that would register ${claimant} claimed this entry's address and was refused (an address is unique within a network)`,
  );
}

/**
 * For the rollout of a group's template (issue 24, items 1 and 2): add this to the conditional
 * write that applies the new template to a live entry (`withEntryEvent` in
 * lib/store/dynamodb-entry-events.ts), so the event costs no write of its own.
 */
export function templateRolledOutEvent(
  at: EpochMillis,
  group: string,
  fromGeneration: number | undefined,
  toGeneration: number,
  changed: readonly string[],
): EntryEvent {
  const from = fromGeneration === undefined ? '' : ` ${fromGeneration} ->`;
  const what = changed.length > 0 ? ` (${changed.join(', ')})` : '';
  return entryEvent(
    'TemplateUpdated',
    at,
    `WorkloadGroup ${group} generation${from} ${toGeneration} applied to the live entry${what}`,
  );
}

/** Why an entry was deleted, for its history item. */
export type DeletionCause =
  | { kind: 'swept'; departure: DepartureKind | undefined }
  | { kind: 'stale'; connectedAt: EpochMillis | undefined }
  | { kind: 'instance-gone'; instanceId: string }
  | { kind: 'operator'; cascade?: string }
  | { kind: 'replaced'; by: string };

/** The deletion's event; `note` (fail static's pacing, say) is added to its message. */
export function deletedEvent(at: EpochMillis, cause: DeletionCause, note?: string): EntryEvent {
  const event = deletionEvent(at, cause);
  return note
    ? { ...event, message: `${event.message}; ${note}`.slice(0, EVENT_MESSAGE_MAX) }
    : event;
}

function deletionEvent(at: EpochMillis, cause: DeletionCause): EntryEvent {
  switch (cause.kind) {
    case 'swept': {
      const how = cause.departure === 'clean' ? 'cleanly' : 'abnormally';
      return entryEvent(
        'Swept',
        at,
        `deleted by the sweeper: disconnected (${how}) for the whole grace period`,
        cause.departure === 'clean' ? 'Normal' : 'Warning',
      );
    }
    case 'stale':
      return entryEvent(
        'SweptStale',
        at,
        `deleted by the sweeper: still marked connected 1.5 x the maximum connection age after its last connect${cause.connectedAt === undefined ? '' : ` (${new Date(cause.connectedAt).toISOString()})`}, with no $disconnect`,
      );
    case 'instance-gone':
      return entryEvent(
        'InstanceGone',
        at,
        `deleted at once: EC2 says instance ${cause.instanceId} is shutting down or terminated`,
      );
    case 'operator':
      return entryEvent(
        'Deleted',
        at,
        cause.cascade
          ? `deleted by registrar delete wg ${cause.cascade} (the group's entries go with it)`
          : 'deleted by registrar delete',
      );
    case 'replaced':
      return entryEvent(
        'Replaced',
        at,
        `deleted so that ${cause.by} could take its address (an address is unique within a network)`,
      );
  }
}
