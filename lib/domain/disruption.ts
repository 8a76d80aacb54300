/**
 * Fail static (DESIGN "Fail static"; anchors: Kubernetes' node lifecycle controller, Eureka's
 * self-preservation). Pure: counts and times in, the sweep's pacing out.
 *
 * Every disconnected entry records how it went away. A deliberate departure (a clean close,
 * an instance EC2 reports terminated) is never held back. An abnormal one (no close frame,
 * 1006, an idle timeout, a holder a liveness check found gone) may be a fault of the control
 * plane rather than of the VM, so when many of a cell's entries are away abnormally at once
 * their deletions slow down, and when every cell is (or nobody could connect at all) they stop,
 * for a bounded time.
 *
 * Judged per tenant: a **cell** is one namespace's entries in one zone. A namespace's agents
 * choose what they claim (in token mode, even their zone), so one namespace's departures may
 * only ever slow that namespace's own deletions: a team that drops 1,000 fake VMs in a zone
 * disrupts its own cell of that zone, never another team's. A fault of the control plane cuts
 * every namespace's VMs at once, so it disrupts every cell, and only then is there a hold.
 */
import {
  type CellMode,
  type CellModeOf,
  cellMode,
  type FleetMode,
  fleetMode,
  type ModeFacts,
} from './cell-mode.ts';
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

/**
 * The key of a cell: `<namespace>#<zone>`. '#' is in neither a namespace (DNS-1123) nor a
 * zone (locality segments are validated the same way), so the key splits back unambiguously.
 */
export function cellKey(namespace: string, zone: string): string {
  return `${namespace}#${zone}`;
}

/** The namespace and zone of a cell key; undefined for a key without a namespace. */
export function splitCell(key: string): { namespace: string; zone: string } | undefined {
  const at = key.indexOf('#');
  if (at <= 0) return undefined;
  return { namespace: key.slice(0, at), zone: key.slice(at + 1) };
}

export interface DisruptionPolicy {
  /** Share of a cell's entries away abnormally above which the cell is disrupted. Default 0.55. */
  threshold: number;
  /** No successful connect anywhere for this long (with entries away): hold. Default 5 min. */
  windowMs: number;
  /** Deletions per second of abnormally departed entries in a disrupted cell. Default 0.1. */
  secondaryDeletesPerSecond: number;
  /**
   * A hold, and a cell's slowdown, last at most this long, then normal pacing resumes (the
   * alarm stays raised). Default 1 h.
   */
  holdBoundMs: number;
}

/**
 * One cell's counters: entries connected, entries away after an abnormal departure, and
 * entries that departed cleanly and are still registered (until swept or back).
 */
export interface ZoneCount {
  namespace: string;
  zone: string;
  connected: number;
  away: number;
  /** Absent where not counted (a table of before, a caller that does not need it): 0. */
  left?: number;
}

/**
 * A cell's population: every entry it registers, connected, away, or departed cleanly and not
 * yet swept. The clean leavers count: when ten VMs stop and three of their `$disconnect`s are
 * lost, three of ten went away abnormally, not three of the three still there, even when the
 * sweeper could not record the ten before they left (its writes failed with the same fault).
 */
export function populationOf(count: Pick<ZoneCount, 'connected' | 'away' | 'left'>): number {
  return Math.max(0, count.connected) + Math.max(0, count.away) + Math.max(0, count.left ?? 0);
}

export type HoldReason = 'all-zones-disrupted' | 'no-connects';

/**
 * What the sweeper remembers between runs (one item), so a hold has a start, a bound and an
 * override, and a slowed cell's pace carries over from one run to the next.
 */
export interface DisruptionRecord {
  /** The mode of the last run. */
  mode: SweepMode;
  /** When the current mode began. */
  since: EpochMillis;
  /** When the current hold began (kept through hold-expired and released). */
  holdSince?: EpochMillis;
  reason?: HoldReason;
  /** The namespaces a hold applies to; absent: every namespace (a fault of the control plane). */
  heldNamespaces?: string[];
  /** An operator released the hold (`registrar sweep --force`) at this time. */
  releasedAt?: EpochMillis;
  /** Deletions a slowed cell may still make (fractional; refilled at the secondary rate). */
  credit: Record<string, number>;
  /** The run that last refilled `credit`. */
  evaluatedAt: EpochMillis;
  /** Cells (see cellKey) disrupted at the last run. */
  disruptedZones: string[];
  /** When each disrupted cell became disrupted: its slowdown's bound counts from there. */
  slowedSince?: Record<string, EpochMillis>;
  /** Entries away abnormally at the last run (what a hold keeps). */
  away: number;
  /** The policy the last run applied, for `registrar sweep status`. */
  policy?: DisruptionPolicy;
  /** Each cell's recent populations (see {@link PopulationPeaks}). */
  peaks?: PopulationPeaks;
}

/**
 * A cell's population is its registered entries (see populationOf). A cell's share is
 * taken against its largest population over the lookback, not the one left now: when 8 of 10
 * VMs leave cleanly and 2 crash, 2 of 10 went away abnormally (a VM's own fault), not 2 of 2
 * (which would look like an outage and hold the two back).
 *
 * Kept as a sliding maximum per cell: `[at, population]` pairs, oldest first, each smaller
 * than the one before, so the head is the peak and a steady cell keeps one pair. The record
 * grows with the cells (namespaces x zones), never with the entries.
 */
export type PopulationPeaks = Record<string, [EpochMillis, number][]>;

/**
 * - normal: every deletion at the normal rate; disrupted cells (if any) at the secondary rate.
 * - held: no deletion of an abnormally departed (or stale) entry in the held namespaces.
 * - hold-expired: the hold outlived its bound; normal pacing, the alarm stays raised.
 * - released: an operator released the hold; normal pacing until the disruption ends.
 */
export type SweepMode = 'normal' | 'held' | 'hold-expired' | 'released';

export interface ZoneStatus extends ZoneCount {
  /** The cell's key (cellKey). */
  cell: string;
  /** away / the cell's largest population over the lookback; 0 for an empty cell. */
  share: number;
  disrupted: boolean;
  /** Disrupted since; with `slowedUntil`, the end of its slowdown at the latest. */
  slowedSince?: EpochMillis;
  slowedUntil?: EpochMillis;
}

export interface DisruptionState {
  mode: SweepMode;
  since: EpochMillis;
  reason?: HoldReason;
  /** The namespaces a hold applies to; absent: every namespace. */
  heldNamespaces?: string[];
  holdSince?: EpochMillis;
  /** Until when a hold lasts at most. */
  holdUntil?: EpochMillis;
  releasedAt?: EpochMillis;
  zones: ZoneStatus[];
  /** Entries away abnormally, all cells. */
  away: number;
  /** The cells' peaks, this run's population included: what the next run compares against. */
  peaks: PopulationPeaks;
}

export interface DisruptionInput {
  now: EpochMillis;
  zones: readonly ZoneCount[];
  /** The newest successful connect anywhere (undefined: none recorded). */
  newestConnectAt: EpochMillis | undefined;
  previous: DisruptionRecord | undefined;
  policy: DisruptionPolicy;
  /**
   * How far back a cell's population counts: the window plus the grace period (an entry that
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
 * (5 min, 2 h) that takes 120 VMs; a smaller namespace relies on its cells' shares (an outage
 * drops every VM abnormally), so one crashed VM in a quiet small fleet is not held for an hour.
 */
export const MIN_EXPECTED_CONNECTS = 5;

/**
 * A hold needs at least this many entries away: with fewer, "every cell disrupted" is one or
 * two VMs of a tiny fleet (100% of one VM is not a control-plane outage), and holding them
 * would keep a crashed VM in the mesh for the hold's bound. Their cells still slow down.
 */
export const MIN_AWAY_TO_HOLD = 3;

/**
 * A cell slows down only with at least this many entries away, for the same reason: one or two
 * crashed VMs are those VMs' own trouble, whatever share of a small cell they are. It matters
 * most when the sweeper could not record the cell's population before its VMs left (its
 * state writes failed, or it had not run yet): the one abnormal leaver of ten that left at
 * once is then 1 of 1, and slowing it would keep a departed VM in the mesh ten seconds per
 * deletion instead of a grace period.
 */
export const MIN_AWAY_TO_SLOW = 3;

/**
 * Decides the mode of this run from the cells' counters and the previous run's record.
 *
 * Deleting an away entry lowers its cell's share, so a share alone would let a slowed cell
 * speed up halfway through (12 of 20 away, 6 deleted: 6 of 14, below 55%). So a disrupted
 * cell stays disrupted until none of its entries is away (each came back or was deleted) or
 * its slowdown reached the bound, and a hold that expired or was released stays so until
 * nothing is away anywhere: the episode ends when the disruption does, not when the deletions
 * have thinned it.
 */
export function evaluateDisruption(input: DisruptionInput): DisruptionState {
  const { now, policy, previous } = input;
  const sticky = new Set(previous?.disruptedZones ?? []);
  const peaks = nextPeaks(input);
  const zones = input.zones.map((count) =>
    zoneStatus(count, input, sticky, peaks[cellKey(count.namespace, count.zone)]?.[0]?.[1] ?? 0),
  );
  const populated = zones.filter((zone) => zone.connected + zone.away > 0);
  const away = populated.reduce((sum, zone) => sum + zone.away, 0);
  const holdSince = previous?.holdSince;
  const after = (mode: 'released' | 'hold-expired'): DisruptionState => ({
    mode,
    since: sinceOf(previous, mode, now),
    zones,
    away,
    peaks,
    ...(previous?.reason ? { reason: previous.reason } : {}),
    ...(previous?.heldNamespaces ? { heldNamespaces: previous.heldNamespaces } : {}),
    ...(holdSince !== undefined ? { holdSince, holdUntil: holdSince + policy.holdBoundMs } : {}),
    ...(mode === 'released' && previous?.releasedAt !== undefined
      ? { releasedAt: previous.releasedAt }
      : {}),
  });
  const disrupted = away > 0 && zones.some((zone) => zone.disrupted);
  // An operator's release lasts as long as the disruption it released.
  if (previous?.releasedAt !== undefined && disrupted) return after('released');
  if (previous?.mode === 'hold-expired' && away > 0) return after('hold-expired');

  const hold = holdOf(input, populated, away, peaks);
  if (!hold) {
    return { mode: 'normal', since: sinceOf(previous, 'normal', now), zones, away, peaks };
  }
  // A hold goes on: it keeps its start, so the bound counts from the first held run.
  const start = holdSince ?? now;
  const base = {
    ...hold,
    holdSince: start,
    holdUntil: start + policy.holdBoundMs,
    zones,
    away,
    peaks,
  };
  if (now >= base.holdUntil) {
    return { ...base, mode: 'hold-expired', since: sinceOf(previous, 'hold-expired', now) };
  }
  return { ...base, mode: 'held', since: sinceOf(previous, 'held', now) };
}

/** Each cell's sliding maximum over the lookback, this run's population pushed last. */
function nextPeaks(input: DisruptionInput): PopulationPeaks {
  const lookbackMs = input.lookbackMs ?? input.policy.windowMs;
  const previous = input.previous?.peaks ?? {};
  const current = new Map<string, number>();
  for (const count of input.zones) {
    const size = populationOf(count);
    const key = cellKey(count.namespace, count.zone);
    current.set(key, (current.get(key) ?? 0) + size);
  }
  const peaks: PopulationPeaks = {};
  for (const key of new Set([...Object.keys(previous), ...current.keys()])) {
    const kept = (previous[key] ?? []).filter(
      ([at]) => at < input.now && input.now - at <= lookbackMs,
    );
    const size = current.get(key) ?? 0;
    while (kept.length > 0 && (kept[kept.length - 1]?.[1] ?? 0) <= size) kept.pop();
    kept.push([input.now, size]);
    // An empty cell with nothing larger in its lookback is forgotten.
    if (kept.length > 1 || size > 0) peaks[key] = kept;
  }
  return peaks;
}

function zoneStatus(
  count: ZoneCount,
  input: DisruptionInput,
  sticky: Set<string>,
  peak: number,
): ZoneStatus {
  // Counters may drift below zero (a retried decrement); a share is never negative.
  const connected = Math.max(0, count.connected);
  const away = Math.max(0, count.away);
  const cell = cellKey(count.namespace, count.zone);
  const total = Math.max(populationOf(count), peak);
  const share = total === 0 ? 0 : away / total;
  const disrupted =
    (share > input.policy.threshold && away >= MIN_AWAY_TO_SLOW) || (sticky.has(cell) && away > 0);
  const status: ZoneStatus = { ...count, connected, away, cell, share, disrupted };
  if (disrupted) {
    const since = input.previous?.slowedSince?.[cell] ?? input.now;
    status.slowedSince = since;
    status.slowedUntil = since + input.policy.holdBoundMs;
  }
  return status;
}

/**
 * Hold when every cell with entries is disrupted: every namespace's VMs went away at once in
 * every zone, and the registrar's own connectivity is the likelier fault (Kubernetes stops
 * evicting then). A namespace's own mass departure disrupts only its cells, so it never
 * holds, or slows, another namespace.
 *
 * Or when entries went away abnormally and no VM at all could connect for the window (a
 * gateway or Lambda outage refuses the very reconnects that would prove the VMs alive). That
 * holds only the namespaces large enough that their own rotations should have connected in
 * the window: another namespace's size (a tenant's 1,000 idle fakes) never makes a small
 * namespace's quiet look like an outage.
 */
function holdOf(
  input: DisruptionInput,
  populated: readonly ZoneStatus[],
  away: number,
  peaks: PopulationPeaks,
): { reason: HoldReason; heldNamespaces?: string[] } | undefined {
  // One or two VMs away are those VMs' own trouble: a fleet of one whose VM crashed is not an
  // outage to hold for an hour.
  if (away < MIN_AWAY_TO_HOLD) return undefined;
  // The share itself, not the sticky flag: a hold ends as soon as the VMs are mostly back,
  // and the few still away are left to their cells' (slowed) pace.
  if (populated.length > 0 && populated.every((zone) => zone.share > input.policy.threshold)) {
    return { reason: 'all-zones-disrupted' };
  }
  // The newest connect is read from the connected entries themselves (the sweep index, not
  // the counters, which may drift): with none connected at all (every VM left, or an outage
  // dropped them all) there is no window to judge, and the cells' shares decide alone (an
  // outage puts every cell above the threshold).
  const quiet =
    input.newestConnectAt !== undefined &&
    input.now - input.newestConnectAt > input.policy.windowMs;
  if (!quiet) return undefined;
  const fleet = new Map<string, number>();
  for (const [key, samples] of Object.entries(peaks)) {
    const namespace = splitCell(key)?.namespace;
    if (namespace === undefined) continue;
    fleet.set(namespace, (fleet.get(namespace) ?? 0) + (samples[0]?.[1] ?? 0));
  }
  const awayIn = new Set(populated.filter((zone) => zone.away > 0).map((zone) => zone.namespace));
  const held = [...awayIn]
    .filter((namespace) => {
      const size = fleet.get(namespace) ?? 0;
      const expected =
        input.maxConnectionAgeMs === undefined
          ? Number.POSITIVE_INFINITY
          : (size * input.policy.windowMs) / input.maxConnectionAgeMs;
      return expected >= MIN_EXPECTED_CONNECTS;
    })
    .sort();
  return held.length > 0 ? { reason: 'no-connects', heldNamespaces: held } : undefined;
}

function sinceOf(previous: DisruptionRecord | undefined, mode: SweepMode, now: EpochMillis) {
  return previous?.mode === mode ? previous.since : now;
}

/** How the sweeper treats the deletion of one abnormally departed (or stale) entry. */
export type Pacing = CellMode;

/** The pacing of a cell's abnormally departed entries this run (lib/domain/cell-mode.ts). */
export function pacingOf(
  state: DisruptionState,
  namespace: string,
  zone: string,
  now: EpochMillis,
): Pacing {
  return cellMode(modeFactsOf(state), namespace, cellKey(namespace, zone), now).mode;
}

/** Each cell's word this run, by cell key, and the fleet's: what the log line and metrics say. */
export function modesOf(
  state: DisruptionState,
  now: EpochMillis,
): { cells: Map<string, CellModeOf & { namespace: string; zone: string }>; fleet: FleetMode } {
  const facts = modeFactsOf(state);
  const cells = new Map<string, CellModeOf & { namespace: string; zone: string }>();
  for (const zone of state.zones) {
    const decided = cellMode(facts, zone.namespace, zone.cell, now);
    cells.set(zone.cell, { ...decided, namespace: zone.namespace, zone: zone.zone });
  }
  return {
    cells,
    fleet: fleetMode(
      facts,
      [...cells.values()].map((cell) => cell.mode),
    ),
  };
}

/** A run's state as the facts a cell's mode is decided by. */
export function modeFactsOf(state: DisruptionState): ModeFacts {
  const disrupted = new Map<string, EpochMillis | undefined>();
  for (const zone of state.zones) if (zone.disrupted) disrupted.set(zone.cell, zone.slowedUntil);
  return {
    mode: state.mode,
    heldNamespaces: state.heldNamespaces,
    holdUntil: state.holdUntil,
    disrupted,
  };
}

/** Whether a hold of this state applies to the namespace. */
export function isHeld(state: Pick<DisruptionState, 'heldNamespaces'>, namespace: string) {
  return state.heldNamespaces === undefined || state.heldNamespaces.includes(namespace);
}

/**
 * Most of a slowed cell's largest recent population one run may delete (Eureka's
 * self-preservation evicts at most 15% of its registry per eviction run), and at least one.
 * The rate alone bounded nothing in a small cell: 0.1/s over a 1-minute interval is 6
 * deletions a run, so a 3-VM zone whose agents were all killed left whole in one run once its
 * grace was over. With the floor it leaves one VM a run (a cell of up to 19 entries), and a
 * large cell still at the secondary rate.
 */
export const SLOWED_RUN_SHARE = 0.1;

/**
 * The slowed cells' deletion credit for this run: what was left, plus the secondary rate
 * times the time since the last run, capped at what one run may delete: one sweep interval's
 * worth at the secondary rate (a sweeper that was down does not earn a burst), and at most
 * SLOWED_RUN_SHARE of the cell's peak (at least one). A cell no longer slowed loses its credit.
 */
export function refillCredit(
  state: DisruptionState,
  previous: DisruptionRecord | undefined,
  now: EpochMillis,
  policy: Pick<DisruptionPolicy, 'secondaryDeletesPerSecond'> & { sweepIntervalMs: number },
): Record<string, number> {
  const elapsedMs = previous ? Math.max(0, now - previous.evaluatedAt) : policy.sweepIntervalMs;
  const perMs = policy.secondaryDeletesPerSecond / 1000;
  const rateCap = perMs * policy.sweepIntervalMs;
  const credit: Record<string, number> = {};
  for (const zone of state.zones) {
    if (pacingOf(state, zone.namespace, zone.zone, now) !== 'slowed') continue;
    const peak = state.peaks[zone.cell]?.[0]?.[1] ?? populationOf(zone);
    const cap = Math.max(1, Math.min(rateCap, Math.floor(SLOWED_RUN_SHARE * peak)));
    // A cell that just became disrupted starts with one deletion: never a stall.
    const left = previous?.credit[zone.cell] ?? 1;
    credit[zone.cell] = Math.min(cap, left + perMs * Math.min(elapsedMs, policy.sweepIntervalMs));
  }
  return credit;
}

/** The record this run leaves for the next one. */
export function nextRecord(
  state: DisruptionState,
  credit: Record<string, number>,
  now: EpochMillis,
): DisruptionRecord {
  const disrupted = state.zones.filter((zone) => zone.disrupted);
  const slowedSince: Record<string, EpochMillis> = {};
  for (const zone of disrupted) slowedSince[zone.cell] = zone.slowedSince ?? now;
  const record: DisruptionRecord = {
    mode: state.mode,
    since: state.since,
    credit,
    evaluatedAt: now,
    disruptedZones: disrupted.map((zone) => zone.cell),
    slowedSince,
    away: state.away,
    peaks: state.peaks,
  };
  if (state.holdSince !== undefined) record.holdSince = state.holdSince;
  if (state.reason !== undefined) record.reason = state.reason;
  if (state.heldNamespaces !== undefined) record.heldNamespaces = state.heldNamespaces;
  if (state.releasedAt !== undefined) record.releasedAt = state.releasedAt;
  return record;
}

/** For logs and `registrar sweep status`: why the sweeper holds. */
export function describeHoldReason(reason: HoldReason, policy: DisruptionPolicy): string {
  return reason === 'all-zones-disrupted'
    ? `more than ${Math.round(policy.threshold * 100)}% of the entries of every namespace in every zone went away abnormally`
    : `entries went away abnormally and no VM connected for ${policy.windowMs / 1000}s`;
}
