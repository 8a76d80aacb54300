import {
  DEFAULT_HEARTBEAT,
  FIRST_HEARTBEAT_AGENT,
  type Heartbeat,
  holderHeartbeat,
  MAX_HEARTBEAT_INTERVAL_MS,
  MAX_HEARTBEAT_MISSES,
  MIN_HEARTBEAT_INTERVAL_MS,
  MIN_HEARTBEAT_MISSES,
  silenceBoundMs,
} from './heartbeat.ts';
import type { EpochMillis } from './model.ts';
import { compareVersions, parseReleaseVersion } from './release-version.ts';

/**
 * The heartbeat one holder (one connection) was told, recorded on the entry beside the holder
 * (issue 44): `$connect` records what its `describe` will name, and an agent that acknowledges
 * a changed setting records the new one. The sweeper holds the holder to exactly `told`,
 * whatever it learned about the group since, so a VM that connects in the second its group is
 * applied is held to the bound its agent pings for from its first ping, and a VM connected
 * before a change keeps the bound it was told until it acknowledges the new one. Pure.
 */
export interface HolderBeat {
  /** The heartbeat the agent was told (and is held to): the default when it cannot follow one. */
  told: Heartbeat;
  /**
   * Whether the agent pings at the interval it is told (FIRST_HEARTBEAT_AGENT or newer, by
   * the version its connect named). False: told and held to the default, whatever the group.
   */
  follows: boolean;
  /** Whether the agent takes a changed heartbeat on a live connection (FIRST_NOTICE_AGENT). */
  notices: boolean;
  /** Since when it is held to `told` (its connect, or its acknowledgement): silence counts from no earlier. */
  at: EpochMillis;
}

/**
 * The first agent release that takes a changed heartbeat on a live connection: it answers a
 * `heartbeat` notice with an acknowledgement (protocol additions, docs/operations.md). Older
 * agents drop the notice unread; they keep the bound they were told until they reconnect.
 */
export const FIRST_NOTICE_AGENT = '0.3.0-dev';

/** Whether `agentVersion` (the connect's word; `0.1.x` or absent: too old) is at least `first`. */
export function agentAtLeast(agentVersion: string | undefined, first: string): boolean {
  const version = agentVersion ? parseReleaseVersion(agentVersion) : undefined;
  const floor = parseReleaseVersion(first);
  return version !== undefined && floor !== undefined && compareVersions(version, floor) >= 0;
}

/**
 * What a connect tells its holder (and records): the group's heartbeat when the agent follows
 * one; otherwise the default, so that no connection is held to an interval it cannot ping at.
 * A connection that names no agent version (a hand-written client, an agent before 0.2) is
 * such a connection: the registrar cannot know it pings faster than every 5 minutes.
 */
export function toldAtConnect(
  group: Heartbeat,
  agentVersion: string | undefined,
  at: EpochMillis,
): HolderBeat {
  const follows = agentAtLeast(agentVersion, FIRST_HEARTBEAT_AGENT);
  return {
    told: follows ? { ...group } : { ...DEFAULT_HEARTBEAT },
    follows,
    notices: agentAtLeast(agentVersion, FIRST_NOTICE_AGENT),
    at,
  };
}

export function sameHeartbeat(a: Heartbeat, b: Heartbeat): boolean {
  return a.intervalMs === b.intervalMs && a.misses === b.misses;
}

/**
 * Whether the holder should be told `current` (its group's setting now): it takes notices and
 * was told something else. A holder whose agent does not follow heartbeats is told nothing new
 * (it is held to the default, which it keeps).
 */
export function needsNotice(beat: HolderBeat | undefined, current: Heartbeat): boolean {
  return beat?.follows === true && beat.notices && !sameHeartbeat(beat.told, current);
}

/**
 * An acknowledgement the registrar records: only the group's setting now (trusted data: the
 * bound comes from the operator's group, never from the agent's word), only from an agent that
 * takes notices. 'stale': the group changed again meanwhile; the next notice names the new one.
 */
export function acknowledgement(acked: Heartbeat, current: Heartbeat): 'record' | 'stale' {
  return sameHeartbeat(acked, current) ? 'record' : 'stale';
}

/** A heartbeat as an agent's acknowledgement names it, or undefined when out of bounds. */
export function heartbeatInBounds(intervalMs: number, misses: number): Heartbeat | undefined {
  const ok =
    Number.isInteger(intervalMs) &&
    Number.isInteger(misses) &&
    intervalMs >= MIN_HEARTBEAT_INTERVAL_MS &&
    intervalMs <= MAX_HEARTBEAT_INTERVAL_MS &&
    misses >= MIN_HEARTBEAT_MISSES &&
    misses <= MAX_HEARTBEAT_MISSES;
  return ok ? { intervalMs, misses } : undefined;
}

/**
 * The heartbeat a holder is held to: exactly what it was told when that was recorded; a
 * holder with no record connected through a registrar before this one (0.2), whose rule
 * (holderHeartbeat: the group's setting for a 0.2 agent connected once the sweeper applied it)
 * it keeps until it reconnects or acknowledges a notice.
 */
export function heldHeartbeat(
  group: { heartbeat: Heartbeat; since: EpochMillis } | undefined,
  holder: { since?: EpochMillis; agentVersion?: string; beat?: HolderBeat },
): Heartbeat {
  return holder.beat ? { ...holder.beat.told } : holderHeartbeat(group, holder);
}

/** Silence counts from the newest of its connect and the time it was held to its bound. */
export function heldSince(holder: {
  since?: EpochMillis;
  beat?: HolderBeat;
}): EpochMillis | undefined {
  if (holder.beat === undefined) return holder.since;
  return Math.max(holder.since ?? Number.NEGATIVE_INFINITY, holder.beat.at);
}

/** The silence bound a holder is held to, in milliseconds. */
export function heldBoundMs(...args: Parameters<typeof heldHeartbeat>): number {
  return silenceBoundMs(heldHeartbeat(...args));
}
