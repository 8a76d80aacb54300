import { entryEvent } from '../domain/entry-events.ts';
import { InvalidRequestError, NotRegisteredError, RegistrarError } from '../domain/errors.ts';
import { formatHeartbeat, type Heartbeat, heartbeatOf } from '../domain/heartbeat.ts';
import { acknowledgement, type HolderBeat, heartbeatInBounds } from '../domain/holder-heartbeat.ts';
import { type EpochMillis, formatRef, type ObjectRef } from '../domain/model.ts';
import type { EntryLifecycleStore, HolderBeatStore } from './entry-lifecycle-store.ts';
import { type HolderLookupStore, holderOf } from './holder.ts';

/** What an acknowledgement reads and writes: the holder's entry, its group, the holder's record. */
export type HeartbeatAckStore = HolderLookupStore &
  Pick<EntryLifecycleStore, 'getEntry' | 'getGroup'> &
  HolderBeatStore;

/** The setting is not its group's any more (changed again meanwhile): nothing recorded. */
export class HeartbeatNotCurrentError extends RegistrarError {
  static readonly CODE = 'HeartbeatNotCurrent';

  constructor(message: string) {
    super(message, 409, HeartbeatNotCurrentError.CODE);
  }
}

/**
 * `{"action":"heartbeat",...}`: the agent acknowledges the heartbeat a notice told it
 * (lib/protocol/heartbeat-notice.ts). Recorded on its holder only when it is its group's
 * setting now (trusted data decides: the bound is the operator's, never the agent's word), so
 * from the acknowledgement on the sweeper holds the holder to it, silence counting from no
 * earlier than now (a shorter bound is never applied before the agent could have obeyed it:
 * it pings at a shorter interval before it acknowledges). A stale acknowledgement (the group
 * changed again) is refused with HeartbeatNotCurrent and changes nothing: the agent keeps
 * what it pings at, the sweeper's next pass tells it the new setting. A connection that holds
 * nothing is told so (NotRegistered) and reconnects.
 */
export async function acknowledgeHeartbeat(
  store: HeartbeatAckStore,
  connection: { connectionId: string; carried: ObjectRef | undefined },
  acked: { intervalSeconds: number; misses: number },
  at: EpochMillis,
): Promise<{ entry: ObjectRef; heartbeat: Heartbeat }> {
  const heartbeat = heartbeatInBounds(Math.round(acked.intervalSeconds * 1000), acked.misses);
  if (!heartbeat) {
    throw new InvalidRequestError(
      `invalid heartbeat message: ${acked.intervalSeconds}s x ${acked.misses} is no heartbeat a group may set (5s to 5m, 2 to 10 misses); acknowledge the one the registrar told`,
      'body',
    );
  }
  const holder = await holderOf(store, connection.connectionId, connection.carried);
  if (!holder) throw new NotRegisteredError();
  const record = await store.getEntry(holder.entry);
  if (!record?.connection?.connectionIds.includes(connection.connectionId)) {
    throw new NotRegisteredError();
  }
  const group = record.autoRegistrationGroup
    ? await store.getGroup({
        namespace: holder.entry.namespace,
        name: record.autoRegistrationGroup,
      })
    : undefined;
  const current = heartbeatOf(group?.group);
  if (acknowledgement(heartbeat, current) === 'stale') {
    throw new HeartbeatNotCurrentError(
      `${formatHeartbeat(heartbeat)} is not the heartbeat of WorkloadGroup ${formatRef({ namespace: holder.entry.namespace, name: record.autoRegistrationGroup ?? '?' })} now (${formatHeartbeat(current)}); keep pinging as before: the registrar tells the current one`,
    );
  }
  const before = record.connection.holderBeats?.[connection.connectionId]?.told;
  const beat: HolderBeat = { told: current, follows: true, notices: true, at };
  const event = entryEvent(
    'HeartbeatChanged',
    at,
    `connection ${connection.connectionId} acknowledged its group's heartbeat ${formatHeartbeat(current)}${before ? ` (was ${formatHeartbeat(before)})` : ''}: held to it from now`,
  );
  const outcome = await store.recordHeartbeat(holder, beat, event);
  if (outcome === 'not-holder') throw new NotRegisteredError();
  return { entry: holder.entry, heartbeat: current };
}
