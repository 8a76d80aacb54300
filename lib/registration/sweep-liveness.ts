import type { EpochMillis } from '../domain/model.ts';
import { type LivenessPolicy, livenessDueAt, livenessWindows } from '../domain/sweep-policy.ts';
import { checkEntryLiveness } from './entry-liveness-check.ts';
import { type GroupHeartbeat, groupsRefresher, loadWithChanges } from './heartbeat-groups.ts';
import { checkHeartbeatGroups } from './sweep-heartbeat.ts';
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
 * no backlog of deletions takes its time. Entries of groups that set a heartbeat are also
 * checked by the heartbeat lane (sweep-heartbeat.ts), as often as their bound needs.
 */
export async function checkLiveness(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
): Promise<void> {
  const { liveness, policy, now } = options;
  if (!liveness || policy.livenessIntervalMs === undefined || !policy.sweepIntervalMs) return;
  // The groups that set a heartbeat (listed again each run, so a setting applies within a
  // sweep interval): the heartbeat lane checks their entries as often as their bound needs;
  // this lane still checks every connected entry once per interval, theirs too, so an entry a
  // pass did not reach (a group larger than a pass can check) is never left unchecked. A
  // failed read leaves every holder on the default, as before heartbeats existed.
  // A group that drops its setting is still checked for as long as a connection told the old
  // one may live (the gateway's longest connection), so its holders are told the change.
  const keepDroppedMs = policy.maxConnectionAgeMs ?? 0;
  const listed = await loadWithChanges(
    store,
    now,
    policy.sweepIntervalMs,
    result.dryRun,
    keepDroppedMs,
  ).catch((error: unknown) => {
    recordFailure(result, error);
    return undefined;
  });
  const groups = listed?.groups ?? new Map<string, GroupHeartbeat>();
  // Between passes, a group whose heartbeat `apply` changed is listed again at once.
  const refresh = listed
    ? groupsRefresher(store, listed.changes, result.dryRun, keepDroppedMs)
    : undefined;
  await Promise.all([
    checkWindows(store, options, result, groups),
    checkHeartbeatGroups(store, options, result, groups, refresh),
  ]);
}

async function checkWindows(
  store: SweepStore,
  options: SweepOptions,
  result: SweepResult,
  groups: ReadonlyMap<string, GroupHeartbeat>,
): Promise<void> {
  const { policy, now } = options;
  const livenessIntervalMs = policy.livenessIntervalMs as number;
  const sweepIntervalMs = policy.sweepIntervalMs as number;
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
  const from = mark ?? now - sweepIntervalMs;
  const windows = livenessWindows({ from, to: now }, policy as LivenessPolicy);
  // Entries arrive in due-time order; `resumeAt` is the earliest due time not known to be
  // checked: where the next run starts. It only moves back (a stop, a failure).
  let resumeAt = now;
  let position = windows.length > 0 ? Math.max(from, now - livenessIntervalMs) : now;
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
    const lane = checkEntryLiveness(record, { store, options, result, groups, now })
      .catch((error: unknown) => {
        recordFailure(result, error);
        resumeAt = Math.min(resumeAt, dueAt);
      })
      .finally(() => lanes.delete(lane));
    lanes.add(lane);
  }
  await Promise.all(lanes);
  // A run that stopped or failed leaves the mark where its unchecked entries begin (entries
  // checked again are only read again: a check writes nothing unless a holder is gone).
  if (!result.dryRun && (mark === undefined || resumeAt > mark)) {
    await store.setLivenessMark(resumeAt).catch((error: unknown) => recordFailure(result, error));
  }
}
