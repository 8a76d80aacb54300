import type { DepartureKind } from '../domain/disruption.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { ConnectionRecordStore, EntryLifecycleStore } from './entry-lifecycle-store.ts';
import { type HolderLookupStore, holderOf } from './holder.ts';
import { type ConnectionLiveness, goneHolders } from './liveness.ts';

/** What a departure reads and writes: the connection's entry, its holders, its record. */
export type UnregisterStore = HolderLookupStore &
  Pick<ConnectionRecordStore, 'forgetConnection'> &
  Pick<EntryLifecycleStore, 'leave' | 'dropHolders'>;

export interface UnregisterInput {
  connectionId: string;
  /** The entry the authorizer named for this connection (token mode); see carried-entry.ts. */
  carried: ObjectRef | undefined;
  /** Server time of the disconnect event. */
  at: EpochMillis;
  /** The agent's close reason said a newer connection replaced this one (a hint only). */
  replaced?: boolean;
  /** How the connection closed, read from its close code (departureOf); absent: abnormal. */
  departure?: DepartureKind;
  /** When the connection connected (API Gateway's `connectedAt`): see LeaveChange.since. */
  connectedAt?: EpochMillis;
}

export interface UnregisterDeps {
  store: UnregisterStore;
  /** Absent: no liveness checks (a lost `$disconnect` is then caught by the stale rule). */
  liveness: ConnectionLiveness | undefined;
  /** A holder younger than this may still be in its `$connect` (see goneHolders). */
  connectSettleMs: number;
}

export type UnregisterResult =
  /** No holder is left: the sweeper deletes the entry after the grace period. */
  | { outcome: 'disconnected'; entry: ObjectRef; dropped: string[] }
  /** Another live connection still holds the entry (make before break). */
  | { outcome: 'still-held'; entry: ObjectRef; dropped: string[] }
  /** The connection held nothing (a late or repeated `$disconnect`): nothing changed. */
  | { outcome: 'unchanged'; entry: ObjectRef }
  /** The connection registered nothing (its connect was refused). */
  | { outcome: 'unknown-connection' };

/**
 * `$disconnect`: the connection stops holding its entry, and the last holder to go marks it
 * disconnected, so the sweeper deletes it after the grace period.
 * - Another connection still holds it (make before break): nothing else changes, unless API
 *   Gateway says those other holders are gone. A holder whose own `$disconnect` was lost
 *   (a crash, a failed write) would otherwise keep a VM that left "connected" for hours.
 * - API Gateway delivers `$disconnect` best-effort, late, or twice: a connection that holds
 *   nothing changes nothing ('unchanged'), and leaves a tombstone so that its own `$connect`,
 *   if it runs later still, does not make it a holder.
 */
export async function unregisterWorkload(
  deps: UnregisterDeps,
  input: UnregisterInput,
): Promise<UnregisterResult> {
  const holder = await holderOf(deps.store, input.connectionId, input.carried);
  if (!holder) return { outcome: 'unknown-connection' };
  const { entry } = holder;
  const left = await deps.store.leave({
    ...holder,
    at: input.at,
    replaced: input.replaced,
    departure: input.departure ?? 'abnormal',
    ...(input.connectedAt !== undefined ? { since: input.connectedAt } : {}),
  });
  // IAM mode's record points at nothing now. The table's TTL removes it if this fails.
  if (!input.carried) await deps.store.forgetConnection(input.connectionId);
  if (left.outcome === 'disconnected') return { outcome: 'disconnected', entry, dropped: [] };
  if (left.outcome === 'not-holder') return { outcome: 'unchanged', entry };
  if (!deps.liveness) return { outcome: 'still-held', entry, dropped: [] };
  const gone = await goneHolders(deps.liveness, left.holders, input.at, deps.connectSettleMs);
  if (gone.length === 0) return { outcome: 'still-held', entry, dropped: [] };
  // The phantoms' last moment is unknown; this disconnect is the last departure seen.
  const dropped = await deps.store.dropHolders(entry, gone, input.at);
  return {
    outcome: dropped === 'disconnected' ? 'disconnected' : 'still-held',
    entry,
    dropped: dropped === 'unchanged' ? [] : gone,
  };
}
