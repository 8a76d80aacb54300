/**
 * Fail static (DESIGN "Fail static"; anchors: Kubernetes' node lifecycle controller, Eureka's
 * self-preservation). Pure: counts and times in, the sweep's pacing out.
 *
 * Every disconnected entry records how it went away. A deliberate departure (a clean close,
 * an instance EC2 reports terminated) is never held back. An abnormal one (no close frame,
 * 1006, an idle timeout, a holder a liveness check found gone) may be a fault of the control
 * plane rather than of the VM, so when many of a zone's entries are away abnormally at once
 * their deletions slow down, and when every zone is (or nobody could connect at all) they stop,
 * for a bounded time.
 */
import type { EpochMillis } from './model.ts';

/** How an entry's last holder went away. */
export type DepartureKind = 'clean' | 'abnormal';

/** API Gateway's own close reason for its idle timeout and maximum connection age. */
const GATEWAY_GOING_AWAY = 'Going away';

/**
 * Reads a `$disconnect`'s close code and reason (API Gateway's `disconnectStatusCode` and
 * `disconnectReason`). Clean: the client closed with a close frame of its own: 1000, 1005 (a
 * close frame without a code), or 1001 with a reason of its own. The close handshake itself
 * proves the path to the VM worked. Anything else is abnormal: 1006 (no close frame: a crash,
 * a network or gateway fault), errors, and API Gateway's own 1001 "Going away" (idle timeout,
 * maximum age), which an agent that lives never reaches (it pings and rotates before both).
 */
export function departureOf(
  code: number | null | undefined,
  reason?: string | null,
): DepartureKind {
  if (code === 1000 || code === 1005) return 'clean';
  if (code === 1001 && reason !== undefined && reason !== null && reason !== '') {
    return reason === GATEWAY_GOING_AWAY ? 'abnormal' : 'clean';
  }
  return 'abnormal';
}

/** Zone of an entry's locality `region/zone/subzone`: `region/zone`; '-' when it has none. */
export function zoneOf(locality: string | undefined): string {
  if (!locality) return NO_ZONE;
  const [region = '', zone] = locality.split('/');
  return zone ? `${region}/${zone}` : region || NO_ZONE;
}

export const NO_ZONE = '-';

export interface DisruptionPolicy {
  /** Share of a zone's entries away abnormally above which the zone is disrupted. Default 0.55. */
  threshold: number;
  /** No successful connect anywhere for this long (with entries away): hold. Default 5 min. */
  windowMs: number;
  /** Deletions per second of abnormally departed entries in a disrupted zone. Default 0.1. */
  secondaryDeletesPerSecond: number;
  /** A hold lasts at most this long, then normal pacing resumes (alarm kept). Default 1 h. */
  holdBoundMs: number;
}

/** One zone's counters: entries connected, and entries away after an abnormal departure. */
export interface ZoneCount {
  zone: string;
  connected: number;
  away: number;
}

export type HoldReason = 'all-zones-disrupted' | 'no-connects';

/**
 * What the sweeper remembers between runs (one item), so a hold has a start, a bound and an
 * override, and a slowed zone's pace carries over from one run to the next.
 */
export interface DisruptionRecord {
  /** The mode of the last run. */
  mode: SweepMode;
  /** When the current mode began. */
  since: EpochMillis;
  /** When the current hold began (kept through hold-expired and released). */
  holdSince?: EpochMillis;
  reason?: HoldReason;
  /** An operator released the hold (`registrar sweep --force`) at this time. */
  releasedAt?: EpochMillis;
  /** Deletions a slowed zone may still make (fractional; refilled at the secondary rate). */
  credit: Record<string, number>;
  /** The run that last refilled `credit`. */
  evaluatedAt: EpochMillis;
  /** Zones disrupted at the last run. */
  disruptedZones: string[];
  /** Entries away abnormally at the last run (what a hold keeps). */
  away: number;
  /** The policy the last run applied, for `registrar sweep status`. */
  policy?: DisruptionPolicy;
  /** Each recent run's zone populations (see {@link PopulationSample}), oldest first. */
  population?: PopulationSample[];
}

/**
 * A zone's population at one run: its entries connected plus those away abnormally. A zone's
 * share is taken against its largest recent population, not the one left now: when 8 of 10
 * VMs leave cleanly and 2 crash, 2 of 10 went away abnormally (a VM's own fault), not 2 of 2
 * (which would look like a zone-wide outage and hold the two back).
 */
export interface PopulationSample {
  at: EpochMillis;
  zones: Record<string, number>;
}

/**
 * - normal: every deletion at the normal rate; disrupted zones (if any) at the secondary rate.
 * - held: no deletion of an abnormally departed (or stale) entry anywhere.
 * - hold-expired: the hold outlived its bound; normal pacing, the alarm stays raised.
 * - released: an operator released the hold; normal pacing until the disruption ends.
 */
export type SweepMode = 'normal' | 'held' | 'hold-expired' | 'released';

export interface ZoneStatus extends ZoneCount {
  /** away / the zone's largest population over the lookback; 0 for an empty zone. */
  share: number;
  disrupted: boolean;
}

export interface DisruptionState {
  mode: SweepMode;
  since: EpochMillis;
  reason?: HoldReason;
  holdSince?: EpochMillis;
  /** Until when a hold lasts at most. */
  holdUntil?: EpochMillis;
  releasedAt?: EpochMillis;
  zones: ZoneStatus[];
  /** Entries away abnormally, all zones. */
  away: number;
  /** The populations of the lookback, this run's last: what the next run compares against. */
  population: PopulationSample[];
}

export interface DisruptionInput {
  now: EpochMillis;
  zones: readonly ZoneCount[];
  /** The newest successful connect anywhere (undefined: none recorded). */
  newestConnectAt: EpochMillis | undefined;
  previous: DisruptionRecord | undefined;
  policy: DisruptionPolicy;
  /**
   * How far back a zone's population counts: the window plus the grace period (an entry that
   * went away at the window's start is due only a grace period later). Default the window.
   */
  lookbackMs?: number;
  /**
   * The gateway's maximum connection age: every live VM reconnects at least once per this
   * long, which tells how many connects a quiet window should have seen. Unset: the quiet
   * window is always telling.
   */
  maxConnectionAgeMs?: number;
}

/**
 * A quiet window proves an outage only where rotation alone should have produced this many
 * connects in it: the chance of none at all by luck is then below 1% (e^-5). At the defaults
 * (5 min, 2 h) that takes 120 VMs; a smaller fleet relies on its zones' shares (an outage
 * drops every VM abnormally), so one crashed VM in a quiet small fleet is not held for an hour.
 */
export const MIN_EXPECTED_CONNECTS = 5;

/**
 * A hold needs at least this many entries away: with fewer, "every zone disrupted" is one or
 * two VMs of a tiny fleet (100% of one VM is not a control-plane outage), and holding them
 * would keep a crashed VM in the mesh for the hold's bound. Their zones still slow down.
 */
export const MIN_AWAY_TO_HOLD = 3;

/**
 * Decides the mode of this run from the zone counters and the previous run's record.
 *
 * Deleting an away entry lowers its zone's share, so a share alone would let a slowed zone
 * speed up halfway through (12 of 20 away, 6 deleted: 6 of 14, below 55%). So a disrupted
 * zone stays disrupted until none of its entries is away (each came back or was deleted), and
 * a hold that expired or was released stays so until nothing is away anywhere: the episode
 * ends when the disruption does, not when the deletions have thinned it.
 */
export function evaluateDisruption(input: DisruptionInput): DisruptionState {
  const { now, policy, previous } = input;
  const sticky = new Set(previous?.disruptedZones ?? []);
  const population = populationOf(input);
  const peak = peakOf(population);
  const zones = input.zones.map((count) =>
    zoneStatus(count, policy.threshold, sticky, peak[count.zone] ?? 0),
  );
  const populated = zones.filter((zone) => zone.connected + zone.away > 0);
  const away = populated.reduce((sum, zone) => sum + zone.away, 0);
  const holdSince = previous?.holdSince;
  const after = (mode: 'released' | 'hold-expired'): DisruptionState => ({
    mode,
    since: sinceOf(previous, mode, now),
    zones,
    away,
    population,
    ...(previous?.reason ? { reason: previous.reason } : {}),
    ...(holdSince !== undefined ? { holdSince, holdUntil: holdSince + policy.holdBoundMs } : {}),
    ...(mode === 'released' && previous?.releasedAt !== undefined
      ? { releasedAt: previous.releasedAt }
      : {}),
  });
  const disrupted = away > 0 && zones.some((zone) => zone.disrupted);
  // An operator's release lasts as long as the disruption it released.
  if (previous?.releasedAt !== undefined && disrupted) return after('released');
  if (previous?.mode === 'hold-expired' && away > 0) return after('hold-expired');

  const reason = holdReason(input, populated, away, peak);
  if (!reason) {
    return { mode: 'normal', since: sinceOf(previous, 'normal', now), zones, away, population };
  }
  // A hold goes on: it keeps its start, so the bound counts from the first held run.
  const start = holdSince ?? now;
  const base = {
    reason,
    holdSince: start,
    holdUntil: start + policy.holdBoundMs,
    zones,
    away,
    population,
  };
  if (now >= base.holdUntil) {
    return { ...base, mode: 'hold-expired', since: sinceOf(previous, 'hold-expired', now) };
  }
  return { ...base, mode: 'held', since: sinceOf(previous, 'held', now) };
}

/** The lookback's samples, this run's added last (one per run; a few per zone). */
function populationOf(input: DisruptionInput): PopulationSample[] {
  const lookbackMs = input.lookbackMs ?? input.policy.windowMs;
  const current: PopulationSample = { at: input.now, zones: {} };
  for (const count of input.zones) {
    current.zones[count.zone] = Math.max(0, count.connected) + Math.max(0, count.away);
  }
  const recent = (input.previous?.population ?? []).filter(
    (sample) => sample.at < input.now && input.now - sample.at <= lookbackMs,
  );
  return [...recent, current];
}

function peakOf(samples: readonly PopulationSample[]): Record<string, number> {
  const peak: Record<string, number> = {};
  for (const sample of samples) {
    for (const [zone, size] of Object.entries(sample.zones)) {
      peak[zone] = Math.max(peak[zone] ?? 0, size);
    }
  }
  return peak;
}

function zoneStatus(
  count: ZoneCount,
  threshold: number,
  sticky: Set<string>,
  peak: number,
): ZoneStatus {
  // Counters may drift below zero (a retried decrement); a share is never negative.
  const connected = Math.max(0, count.connected);
  const away = Math.max(0, count.away);
  const total = Math.max(connected + away, peak);
  const share = total === 0 ? 0 : away / total;
  const disrupted = share > threshold || (sticky.has(count.zone) && away > 0);
  return { zone: count.zone, connected, away, share, disrupted };
}

/**
 * Hold when every zone with entries is disrupted (the registrar's own connectivity is the
 * likelier fault: Kubernetes stops evicting then), or when entries went away abnormally and
 * no VM at all could connect for the window (a gateway or Lambda outage refuses the very
 * reconnects that would prove the VMs alive).
 */
function holdReason(
  input: DisruptionInput,
  populated: readonly ZoneStatus[],
  away: number,
  peak: Record<string, number>,
): HoldReason | undefined {
  // One or two VMs away are those VMs' own trouble: a fleet of one whose VM crashed is not an
  // outage to hold for an hour.
  if (away < MIN_AWAY_TO_HOLD) return undefined;
  // The share itself, not the sticky flag: a hold ends as soon as the VMs are mostly back,
  // and the few still away are left to their zones' (slowed) pace.
  if (populated.length > 0 && populated.every((zone) => zone.share > input.policy.threshold)) {
    return 'all-zones-disrupted';
  }
  // The newest connect is read from the connected entries themselves (the sweep index, not
  // the counters, which may drift): with none connected at all (every VM left, or an outage
  // dropped them all) there is no window to judge, and the zones' shares decide alone (an
  // outage puts every zone above the threshold).
  const quiet =
    input.newestConnectAt !== undefined &&
    input.now - input.newestConnectAt > input.policy.windowMs;
  if (away === 0 || !quiet) return undefined;
  const fleet = Object.values(peak).reduce((sum, size) => sum + size, 0);
  const expected =
    input.maxConnectionAgeMs === undefined
      ? Number.POSITIVE_INFINITY
      : (fleet * input.policy.windowMs) / input.maxConnectionAgeMs;
  return expected >= MIN_EXPECTED_CONNECTS ? 'no-connects' : undefined;
}

function sinceOf(previous: DisruptionRecord | undefined, mode: SweepMode, now: EpochMillis) {
  return previous?.mode === mode ? previous.since : now;
}

/** How the sweeper treats the deletion of one abnormally departed (or stale) entry. */
export type Pacing = 'normal' | 'slowed' | 'held';

export function pacingOf(state: DisruptionState, zone: string): Pacing {
  if (state.mode === 'held') return 'held';
  if (state.mode !== 'normal') return 'normal';
  return state.zones.some((z) => z.zone === zone && z.disrupted) ? 'slowed' : 'normal';
}

/**
 * The slowed zones' deletion credit for this run: what was left, plus the secondary rate
 * times the time since the last run, capped at one sweep interval's worth (a sweeper that was
 * down does not earn a burst). A zone no longer disrupted loses its credit.
 */
export function refillCredit(
  state: DisruptionState,
  previous: DisruptionRecord | undefined,
  now: EpochMillis,
  policy: Pick<DisruptionPolicy, 'secondaryDeletesPerSecond'> & { sweepIntervalMs: number },
): Record<string, number> {
  const elapsedMs = previous ? Math.max(0, now - previous.evaluatedAt) : policy.sweepIntervalMs;
  const perMs = policy.secondaryDeletesPerSecond / 1000;
  const cap = Math.max(1, perMs * policy.sweepIntervalMs);
  const credit: Record<string, number> = {};
  for (const zone of state.zones) {
    if (pacingOf(state, zone.zone) !== 'slowed') continue;
    // A zone that just became disrupted starts with one deletion: never a stall.
    const left = previous?.credit[zone.zone] ?? 1;
    credit[zone.zone] = Math.min(cap, left + perMs * Math.min(elapsedMs, policy.sweepIntervalMs));
  }
  return credit;
}

/** The record this run leaves for the next one. */
export function nextRecord(
  state: DisruptionState,
  credit: Record<string, number>,
  now: EpochMillis,
): DisruptionRecord {
  const record: DisruptionRecord = {
    mode: state.mode,
    since: state.since,
    credit,
    evaluatedAt: now,
    disruptedZones: state.zones.filter((zone) => zone.disrupted).map((zone) => zone.zone),
    away: state.away,
    population: state.population,
  };
  if (state.holdSince !== undefined) record.holdSince = state.holdSince;
  if (state.reason !== undefined) record.reason = state.reason;
  if (state.releasedAt !== undefined) record.releasedAt = state.releasedAt;
  return record;
}

/** For logs and `registrar sweep status`: why the sweeper holds. */
export function describeHoldReason(reason: HoldReason, policy: DisruptionPolicy): string {
  return reason === 'all-zones-disrupted'
    ? `more than ${Math.round(policy.threshold * 100)}% of the entries of every zone went away abnormally`
    : `entries went away abnormally and no VM connected for ${policy.windowMs / 1000}s`;
}
