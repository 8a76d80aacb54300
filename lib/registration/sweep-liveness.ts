import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis } from '../domain/model.ts';
import { type LivenessPolicy, livenessDueAt, livenessWindows } from '../domain/sweep-policy.ts';
import type { Holder } from '../store/registry-store.ts';
import { type ConnectionLiveness, checkHolders } from './liveness.ts';
import type { SweepOptions, SweepStore } from './sweep-options.ts';
import { recordFailure, type SweepResult } from './sweep-result.ts';

/**
 * Checks run side by side, this many at a time: at ~25 ms a check, 32 lanes answer ~1,200
 * connections a second, while 100,000 VMs with a 5-minute interval need ~330. The management
 * API's client keeps up to 50 sockets, so every lane has one.
 */
export const LIVENESS_CONCURRENCY = 32;

/**
 * The liveness lane of a run: checks the holders of the connected entries due for a liveness
 * check (each once per interval) and drops those API Gateway says are gone, so a VM whose
 * `$disconnect` was lost is marked disconnected within the interval, and deleted after the
 * grace period. It runs beside the deletion lane for the whole run, with its own lanes, so
 * no backlog of deletions takes its time.
 */
export async function checkLiveness(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
): Promise<void> {
  const { liveness, policy, now } = options;
  if (!liveness || policy.livenessIntervalMs === undefined || !policy.sweepIntervalMs) return;
  const outOfTime = options.outOfTime ?? (() => false);
  const concurrency = options.livenessConcurrency ?? LIVENESS_CONCURRENCY;
  // Each run covers the time since the previous one: a schedule that fires late, early or
  // twice neither skips an entry nor checks it twice.
  let mark: EpochMillis | undefined;
  try {
    mark = await store.livenessMark();
  } catch (error) {
    // Without the mark the run cannot tell which entries are due: the next run checks them.
    recordFailure(result, error);
    return;
  }
  const from = mark ?? now - policy.sweepIntervalMs;
  const windows = livenessWindows({ from, to: now }, policy as LivenessPolicy);
  // Entries arrive in due-time order; `resumeAt` is the earliest due time not known to be
  // checked: where the next run starts. It only moves back (a stop, a failure).
  let resumeAt = now;
  let position = windows.length > 0 ? Math.max(from, now - policy.livenessIntervalMs) : now;
  const connected = store.connectedIn(windows, Number.POSITIVE_INFINITY, (error) => {
    // A shard's read failed: what it had not returned yet is due at or after the position
    // reached in the merged order.
    recordFailure(result, error);
    resumeAt = Math.min(resumeAt, position);
  });
  const lanes = new Set<Promise<void>>();
  for await (const record of connected) {
    const dueAt = livenessDueAt(windows, record.connection?.connectedAt ?? Number.NaN) ?? position;
    position = dueAt;
    if (lanes.size >= concurrency) await Promise.race(lanes);
    if (outOfTime()) {
      result.stoppedEarly = true;
      resumeAt = Math.min(resumeAt, dueAt);
      break;
    }
    const lane = checkEntry(record, dueAt).finally(() => lanes.delete(lane));
    lanes.add(lane);
  }
  await Promise.all(lanes);
  // A run that stopped or failed leaves the mark where its unchecked entries begin (entries
  // checked again are only read again: a check writes nothing unless a holder is gone).
  if (!result.dryRun && (mark === undefined || resumeAt > mark)) {
    await store.setLivenessMark(resumeAt).catch((error: unknown) => recordFailure(result, error));
  }

  async function checkEntry(record: EntryRecord, dueAt: EpochMillis): Promise<void> {
    result.livenessChecked += 1;
    try {
      const answers = await checkHolders(
        liveness as ConnectionLiveness,
        holders(record),
        now,
        options.connectSettleMs ?? 0,
      );
      if (answers.unknown.length > 0) {
        result.livenessUnknown += answers.unknown.length;
        result.firstUnknown ??= answers.unknown[0]?.reason;
      }
      const gone = answers.gone;
      if (gone.length === 0) return;
      if (result.dryRun) {
        result.phantomsDropped += gone.length;
        return;
      }
      const outcome = await store.dropHolders(record.entry.metadata, gone, now);
      if (outcome !== 'unchanged') result.phantomsDropped += gone.length;
      if (outcome === 'disconnected') result.livenessDisconnected += 1;
    } catch (error) {
      recordFailure(result, error);
      resumeAt = Math.min(resumeAt, dueAt);
    }
  }
}

function holders(record: EntryRecord): Holder[] {
  const connection = record.connection;
  return (connection?.connectionIds ?? []).map((connectionId) => ({
    connectionId,
    since: connection?.holderSince?.[connectionId],
  }));
}
