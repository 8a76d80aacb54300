import { formatDuration, parseDuration } from '../domain/duration.ts';
import type { WorkloadGroup } from '../domain/model.ts';

/**
 * How fast a template change reaches a group's live entries, as a Deployment's rollout is
 * paced: a step of entries (a count, or a share of the group's entries), then a pause before
 * the next step. Set per group by an annotation on the group itself (`metadata.annotations`,
 * which does not bump the generation: changing the pace starts no rollout), so it travels
 * with the group through Git and `kubectl apply` as well as `registrar apply`.
 */
export const ROLLOUT_PACE_ANNOTATION = 'workload-registrar/rollout-pace';

/**
 * 25% every 10 s: four steps, so 20,000 entries take 3 pauses (30 s) plus the writing of the
 * last step (5,000 entries at 400 writes/s, 12.5 s) once the run starts.
 */
export const DEFAULT_PACE_TEXT = '25%/10s';

export interface RolloutPace {
  /** Entries per step: a count, or a share (0 < share <= 1) of the group's entries. */
  step: { count: number } | { share: number };
  /** Time from the start of one step to the start of the next. */
  intervalMs: number;
  /** As written (`25%/10s`). */
  text: string;
}

/** One second to one hour between steps: shorter is no pacing, longer is a paused rollout. */
const MIN_INTERVAL_MS = 1_000;
const MAX_INTERVAL_MS = 3_600_000;

/**
 * `<count>/<duration>` or `<percent>%/<duration>`: `500/30s`, `10%/1m`. A problem is a
 * message naming the value and the form, undefined when it is fine.
 */
export function parsePace(text: string): RolloutPace | { problem: string } {
  const match = /^\s*(\d+(?:\.\d+)?)(%?)\s*\/\s*(\S+)\s*$/.exec(text);
  const problem = {
    problem: `invalid ${ROLLOUT_PACE_ANNOTATION} '${text}': write <entries>/<interval> or <percent>%/<interval>, such as 500/30s or ${DEFAULT_PACE_TEXT}`,
  };
  if (!match) return problem;
  const [, amount = '', percent, interval = ''] = match;
  const value = Number(amount);
  const intervalMs = parseDuration(interval);
  if (intervalMs === undefined || intervalMs < MIN_INTERVAL_MS || intervalMs > MAX_INTERVAL_MS) {
    return {
      problem: `invalid ${ROLLOUT_PACE_ANNOTATION} '${text}': the interval must be a duration from ${formatDuration(MIN_INTERVAL_MS)} to ${formatDuration(MAX_INTERVAL_MS)}`,
    };
  }
  if (percent) {
    if (!(value > 0 && value <= 100)) {
      return {
        problem: `invalid ${ROLLOUT_PACE_ANNOTATION} '${text}': the share must be more than 0% and at most 100%`,
      };
    }
    return { step: { share: value / 100 }, intervalMs, text: text.trim() };
  }
  if (!Number.isInteger(value) || value < 1) {
    return {
      problem: `invalid ${ROLLOUT_PACE_ANNOTATION} '${text}': the number of entries per step must be a whole number, 1 or more`,
    };
  }
  return { step: { count: value }, intervalMs, text: text.trim() };
}

export const DEFAULT_PACE = parsePace(DEFAULT_PACE_TEXT) as RolloutPace;

/** The group's pace, or the default (with the problem, when its annotation is invalid). */
export function paceOf(group: WorkloadGroup): { pace: RolloutPace; problem?: string } {
  const text = group.metadata.annotations?.[ROLLOUT_PACE_ANNOTATION];
  if (text === undefined) return { pace: DEFAULT_PACE };
  const parsed = parsePace(text);
  return 'problem' in parsed ? { pace: DEFAULT_PACE, problem: parsed.problem } : { pace: parsed };
}

/** Entries per step for a group of `total` entries: at least one, so a rollout always moves. */
export function stepSize(pace: RolloutPace, total: number): number {
  if ('count' in pace.step) return pace.step.count;
  return Math.max(1, Math.ceil(pace.step.share * total));
}
