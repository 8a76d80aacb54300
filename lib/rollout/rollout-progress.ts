import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { RolloutPace } from './rollout-pace.ts';
import { stepSize } from './rollout-pace.ts';
import type { RolloutRecord } from './rollout-store.ts';

/**
 * A rollout's progress as pure transitions (time is an argument): what a run does next for a
 * group, and the record after a page of entries. The run (run-rollouts.ts) does the I/O.
 */

/** A pass that lost races to connects and health reports is repeated at most this often per generation. */
export const MAX_PASSES = 3;

export type NextStep =
  /** Nothing to do: rolled out, or some entries left for a recheck that is not due yet. */
  | { kind: 'idle' }
  | { kind: 'paused' }
  /** The step's entries are written: the next step starts at `until`. */
  | { kind: 'wait'; until: EpochMillis }
  /** Write up to `quota` more entries (a new step starts at `newStepAt`, when set). */
  | { kind: 'write'; quota: number; newStepAt?: EpochMillis; repass?: boolean };

/** A new rollout of `generation` (the pause, and a removal request, are kept). */
export function startedRollout(
  previous: RolloutRecord | undefined,
  group: ObjectRef,
  generation: number,
  total: number,
  now: EpochMillis,
): RolloutRecord {
  const record: RolloutRecord = {
    group,
    generation,
    startedAt: now,
    total,
    updated: 0,
    pass: 1,
    skipped: 0,
    stepUpdated: 0,
    waiting: 0,
    revision: previous?.revision ?? 0,
  };
  if (previous?.pausedAt !== undefined) record.pausedAt = previous.pausedAt;
  if (previous?.removal !== undefined) record.removal = previous.removal;
  return record;
}

export function nextStep(record: RolloutRecord, pace: RolloutPace, now: EpochMillis): NextStep {
  if (record.completedAt !== undefined) {
    const recheck = record.recheckAt !== undefined && record.recheckAt <= now;
    if (!recheck) return { kind: 'idle' };
    if (record.pausedAt !== undefined) return { kind: 'paused' };
    return { kind: 'write', quota: stepSize(pace, record.total), newStepAt: now, repass: true };
  }
  if (record.pausedAt !== undefined) return { kind: 'paused' };
  const size = stepSize(pace, record.total);
  if (record.stepStartedAt === undefined) return { kind: 'write', quota: size, newStepAt: now };
  if (record.stepUpdated < size) return { kind: 'write', quota: size - record.stepUpdated };
  const until = record.stepStartedAt + pace.intervalMs;
  if (now < until) return { kind: 'wait', until };
  return { kind: 'write', quota: size, newStepAt: now };
}

/** The record as a step starts: a fresh step, and for a recheck a fresh pass. */
export function steppedRollout(record: RolloutRecord, step: NextStep): RolloutRecord {
  if (step.kind !== 'write' || step.newStepAt === undefined) return record;
  const next: RolloutRecord = { ...record, stepStartedAt: step.newStepAt, stepUpdated: 0 };
  // A recheck starts its passes over: it may repeat a pass that loses races, as the first did.
  if (step.repass) return freshPass({ ...next, pass: 0 });
  return next;
}

/** What one page of entries came to. */
export interface PageResult {
  updated: number;
  /** Entries of an earlier release that do not know their agent's labels: left as they are. */
  waiting: number;
  /** Writes that kept losing races: the next pass retries them. */
  skipped: number;
  /** Where the next page starts; undefined at the end of the group's entries. */
  next: string | undefined;
}

export function afterPage(
  record: RolloutRecord,
  page: PageResult,
  now: EpochMillis,
  recheckMs: number,
): RolloutRecord {
  const next: RolloutRecord = {
    ...record,
    updated: record.updated + page.updated,
    stepUpdated: record.stepUpdated + page.updated,
    waiting: record.waiting + page.waiting,
    skipped: record.skipped + page.skipped,
  };
  if (page.next !== undefined) return { ...next, cursor: page.next };
  delete next.cursor;
  if (next.skipped > 0 && next.pass < MAX_PASSES) return freshPass(next);
  next.completedAt = now;
  // Entries waiting for their agent's reconnect, or that kept losing races: looked at again.
  if (next.waiting > 0 || next.skipped > 0) next.recheckAt = now + recheckMs;
  else delete next.recheckAt;
  return next;
}

/** From the group's first entry again; what this pass counted is counted anew. */
function freshPass(record: RolloutRecord): RolloutRecord {
  const next: RolloutRecord = { ...record, pass: record.pass + 1, skipped: 0, waiting: 0 };
  delete next.cursor;
  delete next.completedAt;
  delete next.recheckAt;
  return next;
}
