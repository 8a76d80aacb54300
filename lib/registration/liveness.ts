import type { ConnectionActivity } from '../domain/heartbeat.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { Holder } from './entry-lifecycle-store.ts';

/** API Gateway could not say (throttled, access denied, unreachable): why, for the log. */
export interface UnknownAnswer {
  unknown: string;
}

/** Open, and what API Gateway says of its activity (`lastActiveAt`), for the silence check. */
export interface ActiveAnswer {
  alive: ConnectionActivity;
}

export type LivenessAnswer = 'alive' | 'gone' | 'unknown' | UnknownAnswer | ActiveAnswer;

/**
 * Whether a connection still exists, as API Gateway knows it (`GET @connections/{id}`).
 * `$disconnect` is best-effort: a crash, a failed write or a lost response can leave a
 * connection listed as a holder after it closed. Only API Gateway's own answer that the
 * connection is gone (410) may drop it; any other failure is unknown and drops nothing, so
 * a fault of the management API never disconnects a live VM.
 */
export interface ConnectionLiveness {
  check(connectionId: string): Promise<LivenessAnswer>;
}

export interface HolderAnswers {
  /** Connections API Gateway says are gone. */
  gone: string[];
  /** Connections it could not answer for, with the cause. */
  unknown: { connectionId: string; reason: string }[];
  /** Open connections whose activity API Gateway told, for the silence check. */
  active: { connectionId: string; since: EpochMillis | undefined; activity: ConnectionActivity }[];
}

/**
 * The holders API Gateway says are gone, checked side by side. A holder younger than
 * `settleMs` is never dropped as gone: API Gateway answers 410 for a connection whose
 * `$connect` is still running too, and dropping it would leave a connection that is about to
 * open holding nothing. With `askUnsettled` (the sweeper's silence check) such a holder is
 * still asked, for its activity only: an open connection's answer is true at any age, so a
 * VM that hangs right after connecting is found within its heartbeat's bound, not after the
 * settle time.
 */
export async function checkHolders(
  liveness: ConnectionLiveness,
  holders: readonly Holder[],
  now: EpochMillis,
  settleMs: number,
  askUnsettled = false,
): Promise<HolderAnswers> {
  const settled = (h: Holder) => h.since === undefined || now - h.since >= settleMs;
  const asked = askUnsettled ? holders : holders.filter(settled);
  const answers = await Promise.all(asked.map((h) => liveness.check(h.connectionId)));
  const result: HolderAnswers = { gone: [], unknown: [], active: [] };
  asked.forEach((holder, i) => {
    const { connectionId, since } = holder;
    const answer = answers[i];
    if (answer === 'gone') {
      if (settled(holder)) result.gone.push(connectionId);
    } else if (answer === 'unknown') result.unknown.push({ connectionId, reason: 'unknown' });
    else if (typeof answer === 'object' && 'alive' in answer)
      result.active.push({ connectionId, since, activity: answer.alive });
    else if (typeof answer === 'object')
      result.unknown.push({ connectionId, reason: answer.unknown });
  });
  return result;
}

/** The holders API Gateway says are gone (see checkHolders). */
export async function goneHolders(
  liveness: ConnectionLiveness,
  holders: readonly Holder[],
  now: EpochMillis,
  settleMs: number,
): Promise<string[]> {
  return (await checkHolders(liveness, holders, now, settleMs)).gone;
}
