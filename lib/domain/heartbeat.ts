import { formatDuration, parseDuration } from './duration.ts';
import type { EpochMillis, WorkloadGroup } from './model.ts';
import { compareVersions, parseReleaseVersion } from './release-version.ts';

/**
 * How long a connection may stay silent before the registrar treats it as gone (DESIGN:
 * routable follows reality). The agent pings every `intervalMs` (it learns the interval from
 * its `describe` reply); a connection that API Gateway saw nothing from for longer than
 * `intervalMs x misses` is closed and stops holding its entry. Pure: times are arguments.
 */
export interface Heartbeat {
  intervalMs: number;
  misses: number;
}

/** Group annotations that set the heartbeat (the group's own metadata, never copied to entries). */
export const HEARTBEAT_ANNOTATIONS = {
  interval: 'workload-registrar/heartbeat-interval',
  misses: 'workload-registrar/heartbeat-misses',
} as const;

/**
 * Today's agents ping every 5 min; 2 misses = 10 min, API Gateway's own idle timeout, so the
 * default adds no message and detects what the idle timeout would, within a liveness interval.
 */
export const DEFAULT_HEARTBEAT: Readonly<Heartbeat> = Object.freeze({
  intervalMs: 5 * 60_000,
  misses: 2,
});

/**
 * 5 s: each ping is one API Gateway message per VM (docs/cost.md prices each setting), and the
 * sweeper's passes are no closer than MIN_PASS_MS. 5 min: past it the default is shorter.
 */
export const MIN_HEARTBEAT_INTERVAL_MS = 5_000;
export const MAX_HEARTBEAT_INTERVAL_MS = 5 * 60_000;
/**
 * At least 2: the agent pings exactly once per interval, so with 1 a ping a few milliseconds
 * late (a busy VM, a slow network) would read as silence and close a live connection.
 */
export const MIN_HEARTBEAT_MISSES = 2;
export const MAX_HEARTBEAT_MISSES = 10;

/**
 * `lastActiveAt` and the answer's time are API Gateway's, but the `Date` header has a
 * resolution of one second: a connection is silent only past the bound plus this.
 */
export const CLOCK_SLACK_MS = 1_000;

/** The first agent release that pings at the interval its registrar names. */
export const FIRST_HEARTBEAT_AGENT = '0.2.0-dev';

/** The group's heartbeat, or the default when it sets none (apply refuses a bad one). */
export function heartbeatOf(group: Pick<WorkloadGroup, 'metadata'> | undefined): Heartbeat {
  const parsed = parseHeartbeat(group?.metadata.annotations ?? {});
  return 'problem' in parsed
    ? { ...DEFAULT_HEARTBEAT }
    : (parsed.heartbeat ?? { ...DEFAULT_HEARTBEAT });
}

/**
 * The heartbeat the annotations set: undefined when they set none, or the problem (naming the
 * annotation and the value) that `apply` refuses with. Either annotation alone takes the
 * other's default.
 */
export function parseHeartbeat(
  annotations: Readonly<Record<string, string>>,
): { heartbeat?: Heartbeat } | { problem: string; annotation: string } {
  const intervalText = annotations[HEARTBEAT_ANNOTATIONS.interval];
  const missesText = annotations[HEARTBEAT_ANNOTATIONS.misses];
  if (intervalText === undefined && missesText === undefined) return {};
  const heartbeat = { ...DEFAULT_HEARTBEAT };
  if (intervalText !== undefined) {
    const ms = parseDuration(intervalText);
    if (ms === undefined || ms < MIN_HEARTBEAT_INTERVAL_MS || ms > MAX_HEARTBEAT_INTERVAL_MS) {
      return {
        annotation: HEARTBEAT_ANNOTATIONS.interval,
        problem: `must be a duration from ${formatDuration(MIN_HEARTBEAT_INTERVAL_MS)} to ${formatDuration(MAX_HEARTBEAT_INTERVAL_MS)} (10s, 1m), got '${intervalText}'`,
      };
    }
    heartbeat.intervalMs = ms;
  }
  if (missesText !== undefined) {
    const misses = /^\d{1,3}$/.test(missesText) ? Number(missesText) : Number.NaN;
    if (!(misses >= MIN_HEARTBEAT_MISSES && misses <= MAX_HEARTBEAT_MISSES)) {
      return {
        annotation: HEARTBEAT_ANNOTATIONS.misses,
        problem: `must be a whole number from ${MIN_HEARTBEAT_MISSES} to ${MAX_HEARTBEAT_MISSES}, got '${missesText}'`,
      };
    }
    heartbeat.misses = misses;
  }
  return { heartbeat };
}

/** How long a connection may be silent: interval x misses (5 min x 2 = 10 min by default). */
export function silenceBoundMs(heartbeat: Heartbeat): number {
  return heartbeat.intervalMs * heartbeat.misses;
}

/** `30s x 3` for logs, events and the CLI. */
export function formatHeartbeat(heartbeat: Heartbeat): string {
  return `${formatDuration(heartbeat.intervalMs)} x ${heartbeat.misses}`;
}

/** What API Gateway said of an open connection (`GET @connections/{id}`), in its own clock. */
export interface ConnectionActivity {
  /** The last message the client sent (a ping included); absent when API Gateway said none. */
  lastActiveAt?: EpochMillis;
  connectedAt?: EpochMillis;
  /** API Gateway's time of the answer (its `Date` header); absent: the caller's clock. */
  answeredAt?: EpochMillis;
}

/**
 * The heartbeat one holder is held to. The group's applies only to a holder that can know it:
 * its agent pings at the interval it is told (FIRST_HEARTBEAT_AGENT or newer, as its newest
 * connect said) and it connected after the registrar started to apply the setting
 * (`groupSince`: its `describe` then named the interval). Any other holder (an older agent,
 * one connected before an operator shortened the interval) keeps the default until it
 * rotates, so changing a group's heartbeat never closes a live VM that still pings at the
 * old pace.
 */
export function holderHeartbeat(
  group: { heartbeat: Heartbeat; since: EpochMillis } | undefined,
  holder: { since?: EpochMillis; agentVersion?: string },
): Heartbeat {
  if (!group) return { ...DEFAULT_HEARTBEAT };
  const version = holder.agentVersion ? parseReleaseVersion(holder.agentVersion) : undefined;
  const first = parseReleaseVersion(FIRST_HEARTBEAT_AGENT);
  const heeds =
    version !== undefined && first !== undefined && compareVersions(version, first) >= 0;
  const learned = holder.since !== undefined && holder.since >= group.since;
  return heeds && learned ? group.heartbeat : { ...DEFAULT_HEARTBEAT };
}

/**
 * Whether an open connection has been silent past its bound, by API Gateway's own clock when
 * the answer carries it (the registrar's clock may differ from API Gateway's). Silence counts
 * from the newest of its last message, its connect (API Gateway's `connectedAt`) and the time
 * it became a holder: a connection that has sent nothing yet (a rotation's new connection, an
 * agent that is only reconnecting) is silent only once the bound has passed since it opened.
 * Without `lastActiveAt` nothing is known: not silent. A time in the future is not silence.
 */
export function isSilent(
  activity: ConnectionActivity,
  holderSince: EpochMillis | undefined,
  now: EpochMillis,
  heartbeat: Heartbeat,
): boolean {
  if (activity.lastActiveAt === undefined) return false;
  const at = activity.answeredAt ?? now;
  const heard = Math.max(
    activity.lastActiveAt,
    activity.connectedAt ?? Number.NEGATIVE_INFINITY,
    holderSince ?? Number.NEGATIVE_INFINITY,
  );
  return at - heard > silenceBoundMs(heartbeat) + CLOCK_SLACK_MS;
}

/** The silence of a connection, for the event's message. */
export function silenceOf(activity: ConnectionActivity, now: EpochMillis): number {
  return Math.max(0, (activity.answeredAt ?? now) - (activity.lastActiveAt ?? now));
}
