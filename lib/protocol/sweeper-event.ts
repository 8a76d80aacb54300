import type { ScheduledEvent } from 'aws-lambda';
import { InvalidRequestError } from '../domain/errors.ts';
import type { EpochMillis } from '../domain/model.ts';

/**
 * What the schedule sends heartbeat lane k (1 .. n-1); lane 0's event is the plain tick. `time`:
 * when the rule fired (EventBridge's `<aws.events.event.time>`), so a lane delivered late picks
 * its tick's plan (SweepOptions.tickAt); absent (a rule of an older stack), its start.
 */
export interface HeartbeatLaneEvent {
  heartbeatLane: number;
  time?: string;
}

/** The schedule's tick (lane 0: the sweep), or heartbeat lane k's. */
export type SweeperEvent = ScheduledEvent | Record<string, never> | HeartbeatLaneEvent;

/** Which lane an event runs and the tick it belongs to. */
export interface SweeperTick {
  lane: number;
  tickAt: EpochMillis;
}

/**
 * The lane and tick of a sweeper event. Throws InvalidRequestError for a lane this stack does
 * not run (see laneOf).
 */
export function parseSweeperEvent(
  event: unknown,
  settings: { heartbeatLanes: number; sweep: { sweepIntervalMs: number } },
  now: EpochMillis,
): SweeperTick {
  return {
    lane: laneOf(event, settings.heartbeatLanes),
    tickAt: tickOf(event, now, settings.sweep.sweepIntervalMs),
  };
}

/**
 * The scheduled time an event names (`time`), when it is a time within one interval before
 * `now`; else `now` (a manual invoke, a rule without it, a time that cannot be the tick's).
 */
export function tickOf(event: unknown, now: number, intervalMs: number): number {
  const text = (event as { time?: unknown } | null)?.time;
  const at = typeof text === 'string' ? Date.parse(text) : Number.NaN;
  return Number.isFinite(at) && at <= now && now - at <= intervalMs ? at : now;
}

/**
 * The lane an event names: 0 for the schedule's plain tick (or a manual invoke with `{}`),
 * else `heartbeatLane`, which must be a whole number from 1 to lanes - 1 (a rule left from a
 * stack that had more lanes, or a hand-made invoke, is refused, not run as some lane).
 */
export function laneOf(event: unknown, lanes: number): number {
  const given = (event as { heartbeatLane?: unknown } | null)?.heartbeatLane;
  if (given === undefined) return 0;
  if (typeof given !== 'number' || !Number.isInteger(given) || given < 1 || given >= lanes) {
    throw new InvalidRequestError(
      `invalid sweeper event: heartbeatLane (value '${String(given)}') must be a whole number from 1 to ${lanes - 1} (this stack runs ${lanes} heartbeat lane(s); lane 0 is the plain schedule tick)`,
    );
  }
  return given;
}
