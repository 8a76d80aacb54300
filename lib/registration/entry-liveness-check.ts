import { formatDuration } from '../domain/duration.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { formatHeartbeat, type Heartbeat, isSilent, silenceOf } from '../domain/heartbeat.ts';
import {
  type HolderBeat,
  heldHeartbeat,
  heldSince,
  needsNotice,
} from '../domain/holder-heartbeat.ts';
import type { EpochMillis } from '../domain/model.ts';
import { heartbeatNotice } from '../protocol/heartbeat-notice.ts';
import type { Holder } from './entry-lifecycle-store.ts';
import { type GroupHeartbeat, groupKeyOf } from './heartbeat-groups.ts';
import { type ConnectionLiveness, checkHolders } from './liveness.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import { countIn, type SweepResult } from './sweep-result.ts';

/**
 * One connected entry's liveness check: its holders asked of API Gateway side by side; those
 * it says are gone (410) are dropped, and those open but silent past their heartbeat's bound
 * are dropped with a Silent event and then closed (DELETE @connections). Dropped first, then
 * closed: the close's `$disconnect` then finds a connection that holds nothing, so the event
 * that says why the entry left is Silent, not a plain disconnect. A close that fails changes
 * nothing of that: API Gateway's own answer proved the silence, the entry is no longer
 * routable, and the connection, if it ever speaks again, is told it holds nothing and
 * reconnects. Every write is conditional on the holder still being listed, so a check that
 * runs twice, or that races a reconnect (a new connection is another holder), drops nothing
 * twice and never the new one. Throws only a store failure.
 */
export async function checkEntryLiveness(
  record: EntryRecord,
  deps: {
    store: Pick<SweepStore, 'dropHolders'>;
    options: SweepOptions;
    result: SweepResult;
    groups: ReadonlyMap<string, GroupHeartbeat>;
    now: EpochMillis;
    /**
     * The heartbeat lane: tell holders their group's changed heartbeat (tellChanged), through
     * the pass's own pool of notices, so a notice's round trip never holds a check's place.
     */
    tell?: (send: () => Promise<void>) => void;
  },
): Promise<void> {
  const { store, options, result, groups, now } = deps;
  result.livenessChecked += 1;
  const answers = await checkHolders(
    options.liveness as ConnectionLiveness,
    holdersOf(record),
    now,
    options.connectSettleMs ?? 0,
    true,
  );
  if (answers.unknown.length > 0) {
    result.livenessUnknown += answers.unknown.length;
    result.firstUnknown ??= answers.unknown[0]?.reason;
  }
  const group = record.autoRegistrationGroup
    ? groups.get(groupKeyOf(record.entry.metadata.namespace, record.autoRegistrationGroup))
    : undefined;
  // Each holder is held to the heartbeat it was told (recorded by its connect, or by its
  // acknowledgement of a change), whatever the group says now: a holder told 5 s x 2 in the
  // second its group was applied is held to it before this sweeper ever listed the group.
  const beats = record.connection?.holderBeats ?? {};
  const held = (connectionId: string, since: number | undefined) => {
    const holder = { since, agentVersion: record.agentVersion, beat: beats[connectionId] };
    return { heartbeat: heldHeartbeat(group, holder), since: heldSince(holder) };
  };
  const silent = answers.active.filter(({ connectionId, activity, since }) => {
    const bound = held(connectionId, since);
    return isSilent(activity, bound.since, now, bound.heartbeat);
  });
  const gone = answers.gone;
  if (deps.tell && group && !result.dryRun) {
    const silentIds = new Set(silent.map((s) => s.connectionId));
    const live = answers.active.filter((a) => !silentIds.has(a.connectionId));
    const setting = group.heartbeat;
    deps.tell(() =>
      tellChanged(
        live.map((a) => a.connectionId),
        beats,
        setting,
        options,
        result,
      ),
    );
  }
  if (gone.length === 0 && silent.length === 0) return;
  if (result.dryRun) {
    result.phantomsDropped += gone.length;
    result.silentDropped += silent.length;
    countIn(result.silentByNamespace, record.entry.metadata.namespace, silent.length);
    return;
  }
  if (gone.length > 0) {
    const outcome = await store.dropHolders(record.entry.metadata, gone, now);
    if (outcome !== 'unchanged') result.phantomsDropped += gone.length;
    if (outcome === 'disconnected') result.livenessDisconnected += 1;
  }
  if (silent.length === 0) return;
  const first = silent[0];
  const heartbeat = held(first?.connectionId ?? '', first?.since).heartbeat;
  // Whole seconds: API Gateway's own times are no finer than that (its Date header).
  const silence = Math.round((first ? silenceOf(first.activity, now) : 0) / 1000) * 1000;
  const why = `sent nothing for ${formatDuration(silence)}, past its heartbeat ${formatHeartbeat(heartbeat)}`;
  const ids = silent.map((s) => s.connectionId);
  const outcome = await store.dropHolders(record.entry.metadata, ids, now, { why });
  if (outcome === 'unchanged') return;
  result.silentDropped += ids.length;
  countIn(result.silentByNamespace, record.entry.metadata.namespace, ids.length);
  if (outcome === 'disconnected') result.livenessDisconnected += 1;
  const close = options.closeConnection;
  if (!close) return;
  await Promise.all(
    ids.map((id) =>
      close(id).catch((error: unknown) => {
        // Not a failed run: the entry already left; the log says why the close did not land.
        result.silentCloseFailed += 1;
        result.firstCloseFailure ??= error instanceof Error ? error.message : String(error);
      }),
    ),
  );
}

/**
 * Tells each live holder that takes notices and was told another setting its group's
 * heartbeat now (issue 44): a `heartbeat-change` notice, no write (the agent's acknowledgement
 * records it). Sent again on every pass until acknowledged: a lost notice, a lost
 * acknowledgement, a failed write of it are all mended by the next pass. A holder whose agent
 * cannot take notices keeps what it was told until it reconnects (describe wg names them).
 */
async function tellChanged(
  connectionIds: readonly string[],
  beats: Readonly<Record<string, HolderBeat>>,
  current: Heartbeat,
  options: SweepOptions,
  result: SweepResult,
): Promise<void> {
  const notify = options.notifyConnection;
  if (!notify) return;
  const told = connectionIds.filter((id) => needsNotice(beats[id], current));
  const notice = heartbeatNotice(current);
  await Promise.all(
    told.map(async (id) => {
      const answer = await notify(id, notice).catch((error: unknown) => ({
        failed: error instanceof Error ? error.message : String(error),
      }));
      if (answer === 'sent') result.heartbeatNotices += 1;
      else if (answer !== 'gone') result.heartbeatNoticesFailed += 1;
    }),
  );
}

function holdersOf(record: EntryRecord): Holder[] {
  const connection = record.connection;
  return (connection?.connectionIds ?? []).map((connectionId) => ({
    connectionId,
    since: connection?.holderSince?.[connectionId],
  }));
}
