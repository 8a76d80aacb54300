import { describeHoldReason, modesOf, splitCell } from '../domain/disruption.ts';
import type { EpochMillis } from '../domain/model.ts';
import { logger, METRIC, recordByZone, recordCount } from '../observability.ts';
import type { SweepResult } from '../registration/sweep-result.ts';
import { reportHeartbeatLane } from './heartbeat-lane-report.ts';

// Lane 0's run told to operators: metrics by zone and the log lines the dashboard, the local
// runtime's console (infra/local/console-log.ts) and docs/operations.md name.

/** The fail-static policy the log line words a hold's reason by. */
export type HoldWording = Parameters<typeof describeHoldReason>[1];

/** Every metric and warning of one sweep run (the run's last line is the caller's). */
export function reportSweep(result: SweepResult, policy: HoldWording, runAt: EpochMillis): void {
  for (const entry of result.deleted) {
    logger.info('entry swept', {
      entry: `${entry.namespace}/${entry.name}`,
      reason: entry.reason,
    });
  }
  recordCount(METRIC.livenessChecks, result.livenessChecked);
  recordCount(METRIC.livenessUnknown, result.livenessUnknown);
  recordCount(METRIC.sweepStoppedEarly, result.stoppedEarly ? 1 : 0);
  // Zero included, like PhantomHoldersDropped: a run that found no silence is a data point.
  // A total, not by namespace (a dimension per tenant is a custom metric each); the log
  // line below names them.
  recordCount(METRIC.silentHolders, result.silentDropped);
  reportHeartbeatLane(result);
  if (result.silentDropped > 0) {
    logger.warn('connections silent past their heartbeat were closed; their entries left', {
      silent: result.silentDropped,
      byNamespace: result.silentByNamespace,
      closeFailed: result.silentCloseFailed,
      ...(result.firstCloseFailure ? { firstCloseFailure: result.firstCloseFailure } : {}),
    });
  }
  if (result.livenessUnknown > 0) {
    logger.warn('API Gateway could not answer some liveness checks; their holders are kept', {
      unknown: result.livenessUnknown,
      reason: result.firstUnknown,
    });
  }
  recordCount(METRIC.phantomHolders, result.phantomsDropped);
  // By zone, summed over namespaces: a metric's dimensions stay as few as the zones (one
  // per tenant would cost a custom metric each); `registrar sweep status` shows each cell.
  recordByZone(METRIC.sweepHeld, byZone(result.held));
  recordByZone(METRIC.sweepSlowed, byZone(result.slowed));
  recordByZone(METRIC.sweepHoldExpired, byZone(result.afterHoldBound));
  // The cells' words as the log line, `registrar sweep status` and the dashboard show them.
  recordByZone(METRIC.cellsSlowed, cellsIn(result, 'slowed', runAt));
  recordByZone(METRIC.cellsHeld, cellsIn(result, 'held', runAt));
  logDisruption(result, policy, runAt);
}

/**
 * Fail static in one line, in the words `registrar sweep status` and the dashboard use (one
 * function decides them: lib/domain/cell-mode.ts): the fleet's mode, and each cell that is
 * slowed or held, with until when. A change of the fleet's word is a warning (the local
 * runtime prints it too); a run that stays slowed or held says so again, so a log search
 * finds the whole episode. `deferred` counts this run's deletions held back or slowed, which
 * may be 0 in a slowed cell (nothing was due yet, or its credit covered them).
 */
function logDisruption(result: SweepResult, policy: HoldWording, now: EpochMillis): void {
  const state = result.disruption;
  if (!state) return;
  const { cells } = modesOf(state, now);
  const iso = (at: number | undefined) =>
    at === undefined ? undefined : new Date(at).toISOString();
  // A held namespace's cells with nothing away hold nothing: not named (a hold of every
  // namespace would list every cell).
  const away = new Set(state.zones.filter((zone) => zone.away > 0).map((zone) => zone.cell));
  const named = (mode: 'slowed' | 'held') =>
    [...cells]
      .filter(([key, cell]) => cell.mode === mode && (mode === 'slowed' || away.has(key)))
      .map(([key, cell]) => (cell.until === undefined ? key : `${key} until ${iso(cell.until)}`));
  const fields = {
    mode: state.fleetMode,
    since: iso(state.since),
    ...(state.reason ? { why: describeHoldReason(state.reason, policy) } : {}),
    ...(state.holdUntil ? { holdUntil: iso(state.holdUntil) } : {}),
    ...(state.heldNamespaces ? { heldNamespaces: state.heldNamespaces } : {}),
    // Cells: `<namespace>#<zone>`.
    slowedCells: named('slowed'),
    heldCells: named('held'),
    deferred: { held: sum(result.held), slowed: sum(result.slowed) },
  };
  const previous = state.previousFleetMode;
  if (previous !== undefined && previous !== state.fleetMode) {
    logger.warn(`sweep mode changed: ${previous} -> ${state.fleetMode}`, fields);
  } else if (state.fleetMode !== 'normal') {
    logger.warn(`sweep ${state.fleetMode}`, fields);
  }
}

/** Cells in a mode this run, by zone (summed over namespaces): the metrics' word per cell. */
function cellsIn(result: SweepResult, mode: 'slowed' | 'held', now: EpochMillis) {
  const byZone: Record<string, number> = {};
  if (!result.disruption) return byZone;
  for (const cell of modesOf(result.disruption, now).cells.values()) {
    if (cell.mode === mode) byZone[cell.zone] = (byZone[cell.zone] ?? 0) + 1;
  }
  return byZone;
}

/** Counts by cell (`<namespace>#<zone>`) summed by zone. */
function byZone(byCell: Record<string, number>): Record<string, number> {
  const zones: Record<string, number> = {};
  for (const [cell, count] of Object.entries(byCell)) {
    const zone = splitCell(cell)?.zone ?? cell;
    zones[zone] = (zones[zone] ?? 0) + count;
  }
  return zones;
}

/** Deletions held back or slowed this run, all cells together. */
export function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((total, value) => total + value, 0);
}
