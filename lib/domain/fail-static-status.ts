import {
  type CellMode,
  cellMode,
  type FleetMode,
  fleetMode,
  type ModeFacts,
  type ModeNote,
} from './cell-mode.ts';
import {
  cellKey,
  type DisruptionRecord,
  describeHoldReason,
  type HoldReason,
  populationOf,
  splitCell,
  type ZoneCount,
} from './disruption.ts';
import type { EpochMillis } from './model.ts';

/**
 * Fail static as an operator reads it, from the record the sweeper's last run left and the
 * cells' counters: what `registrar sweep status` prints and the dashboard shows. The words are
 * lib/domain/cell-mode.ts's, decided from the record exactly as the run decided them.
 */
export interface FailStaticStatus {
  /** The fleet's word: held, slowed, normal, or after a hold, hold-expired or released. */
  mode: FleetMode;
  since: string | null;
  reason: HoldReason | null;
  why: string | null;
  /** null: every namespace (a hold judged a fault of the control plane). */
  heldNamespaces: string[] | null;
  holdUntil: string | null;
  releasedAt: string | null;
  evaluatedAt: string | null;
  away: number;
  cells: CellStatus[];
}

export interface CellStatus extends ZoneCount {
  /**
   * Entries away of the most the cell registered over the last run's lookback (its recorded
   * peak, or its counters now when larger): the share fail static judges.
   */
  share: number;
  /** The cell's word: normal, slowed or held. */
  state: CellMode;
  /** Why a disrupted cell is at the normal rate anyway; null otherwise. */
  note: ModeNote | null;
  until: string | null;
}

/** The facts a saved record gives (lib/domain/cell-mode.ts), with its policy's bound. */
export function modeFactsOfRecord(record: DisruptionRecord | undefined): ModeFacts {
  const bound = record?.policy?.holdBoundMs;
  const holdUntil =
    record?.holdSince !== undefined && bound !== undefined ? record.holdSince + bound : undefined;
  const disrupted = new Map<string, EpochMillis | undefined>();
  for (const cell of record?.disruptedZones ?? []) {
    const since = record?.slowedSince?.[cell];
    disrupted.set(cell, since !== undefined && bound !== undefined ? since + bound : undefined);
  }
  return {
    mode: record?.mode ?? 'normal',
    heldNamespaces: record?.heldNamespaces,
    holdUntil,
    disrupted,
  };
}

/** The fleet's word as a saved record left it (at `now`): what the last run showed. */
export function fleetModeOfRecord(record: DisruptionRecord, now: EpochMillis): FleetMode {
  const facts = modeFactsOfRecord(record);
  const cells = [...facts.disrupted.keys()].map(
    (cell) => cellMode(facts, splitCell(cell)?.namespace ?? '', cell, now).mode,
  );
  return fleetMode(facts, cells);
}

export function failStaticStatus(
  record: DisruptionRecord | undefined,
  zones: readonly ZoneCount[],
  now: EpochMillis,
): FailStaticStatus {
  const facts = modeFactsOfRecord(record);
  const holdUntil = facts.holdUntil;
  const cells = zones.map((zone): CellStatus => {
    const cell = cellKey(zone.namespace, zone.zone);
    const decided = cellMode(facts, zone.namespace, cell, now);
    const total = Math.max(populationOf(zone), record?.peaks?.[cell]?.[0]?.[1] ?? 0);
    // A held namespace's cell with nothing away holds nothing: not listed as held (a hold of
    // every namespace listed empty namespaces and zones as held).
    const state = decided.mode === 'held' && Math.max(0, zone.away) === 0 ? 'normal' : decided.mode;
    return {
      ...zone,
      share: total === 0 ? 0 : Math.max(0, zone.away) / total,
      state,
      note: decided.note ?? null,
      until: iso(decided.until),
    };
  });
  const mode = fleetMode(
    facts,
    cells.map((cell) => cell.state),
  );
  // Slowed while the run's mode is normal: since the first of its slowed cells was slowed.
  const slowedSince = cells
    .filter((cell) => cell.state === 'slowed')
    .map((cell) => record?.slowedSince?.[cellKey(cell.namespace, cell.zone)])
    .filter((at): at is EpochMillis => at !== undefined);
  const since =
    mode === 'slowed' && record?.mode === 'normal' && slowedSince.length > 0
      ? Math.min(...slowedSince)
      : record?.since;
  return {
    mode,
    since: iso(since),
    reason: record?.reason ?? null,
    why: record?.reason && record.policy ? describeHoldReason(record.reason, record.policy) : null,
    heldNamespaces: record?.heldNamespaces ?? null,
    holdUntil: iso(holdUntil),
    releasedAt: iso(record?.releasedAt),
    evaluatedAt: iso(record?.evaluatedAt),
    away: zones.reduce((sum, zone) => sum + Math.max(0, zone.away), 0),
    cells,
  };
}

function iso(at: EpochMillis | undefined): string | null {
  return at === undefined ? null : new Date(at).toISOString();
}
