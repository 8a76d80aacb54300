import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context, ScheduledEvent } from 'aws-lambda';
import type { FunctionHandler } from '../lib/dependencies.ts';
import { describeHoldReason, modesOf, splitCell } from '../lib/domain/disruption.ts';
import type { SchemaRecord } from '../lib/domain/table-schema.ts';
import { logger, METRIC, metrics, recordByZone, recordCount } from '../lib/observability.ts';
import { errorsLoggedAndRethrown } from '../lib/protocol/error-response.ts';
import {
  checkTable,
  type MigrationDeps,
  runMigrations,
} from '../lib/registration/run-migrations.ts';
import { runSweep, type SweepResult } from '../lib/registration/sweep.ts';
import { RELEASE } from '../lib/release.ts';
import { lazyHandler } from '../lib/wiring/lazy-handler.ts';
import { type SweeperDependencies, sweeperDependencies } from '../lib/wiring/sweeper.ts';
import {
  type HeartbeatLaneEvent,
  laneOf,
  reportHeartbeatLane,
  runLane,
  tickOf,
} from './sweeper-lane.ts';
import { EMPTY_SUMMARY, heartbeatOf, type SweeperSummary } from './sweeper-summary.ts';

export { heartbeatOf, type SweeperSummary } from './sweeper-summary.ts';

/** The schedule's tick (lane 0: the sweep), or heartbeat lane k's (sweeper-lane.ts). */
export type SweeperEvent = ScheduledEvent | Record<string, never> | HeartbeatLaneEvent;

/**
 * Time kept back from the invocation's deadline: one paced delete or one liveness check (a few
 * requests, each retried by the SDK) fits well inside it, and the metrics still flush.
 */
export const DEADLINE_MARGIN_MS = 5_000;

/**
 * The EventBridge schedule: deletes entries disconnected past the grace period and stale
 * ones, and checks the holders of connected entries with API Gateway. A failure propagates so
 * the invocation fails and the sweeper alarm sees it; the next run (a minute later) picks up
 * where this one stopped. Each run stops before its deadline, whatever is still due.
 */
export function createSweeperHandler(
  deps: SweeperDependencies,
): FunctionHandler<SweeperEvent, SweeperSummary> {
  async function onSchedule(event: SweeperEvent, context: Context): Promise<SweeperSummary> {
    // Heartbeat lanes 1 .. n-1 only check their share of the heartbeat groups, under leases
    // of their own: they never take the sweep's (below), so no lane delays a deletion.
    const lane = laneOf(event, deps.config.heartbeatLanes);
    const tickAt = tickOf(event, deps.now(), deps.config.sweep.sweepIntervalMs);
    if (lane > 0) return runLane(deps, lane, context, DEADLINE_MARGIN_MS, tickAt);
    // One run at a time: the lease lasts until this invocation's deadline (on Lambda, the
    // timeout is shorter than the sweep interval), and never longer than one interval (the
    // local runtime's invocations have 15 minutes), so a run that crashes or is killed blocks
    // the next no longer than that. A tick that finds it held (the previous run is still
    // going) does nothing: the next tick sweeps everything due anyway.
    const holder = context.awsRequestId;
    const startedAt = deps.now();
    const leaseMs = Math.min(context.getRemainingTimeInMillis(), deps.config.sweep.sweepIntervalMs);
    const lease = await deps.store.acquireSweepLease(holder, startedAt, startedAt + leaseMs);
    if (!lease.acquired) {
      logger.info('another sweep run is still going; this tick skips', {
        holder: lease.holder,
        until: new Date(lease.until).toISOString(),
      });
      return { ...EMPTY_SUMMARY, mode: 'skipped' };
    }
    try {
      // A table written by a release this code cannot read (a rollback past a migration that
      // did not keep older readers) is refused before anything is deleted: the invocation
      // fails, naming both releases, and the sweeper's error alarm fires.
      const tables = schemaDeps();
      const record = tables ? await checkTable(tables) : undefined;
      const summary = await sweepOnce(context, tickAt);
      if (tables) await migrateInSpareTime(tables, record, context);
      return summary;
    } finally {
      // The next tick need not wait for this run's deadline. Best effort: the lease runs out.
      await deps.store.releaseSweepLease(holder).catch((error: unknown) => {
        logger.warn('could not release the sweep lease; it runs out at the deadline', {
          reason: error instanceof Error ? error.message : String(error),
        });
      });
    }
  }

  function schemaDeps(): Omit<MigrationDeps, 'outOfTime'> | undefined {
    if (!deps.schema || !deps.migrations) return undefined;
    return { schema: deps.schema, migrations: deps.migrations, release: RELEASE, now: deps.now };
  }

  /**
   * After the sweep, with the time left: records that this release runs on the table and
   * runs pending migrations a page at a time, resuming where the last run stopped. A failure
   * fails the invocation (the sweeper's error alarm); the next run resumes.
   */
  async function migrateInSpareTime(
    tables: Omit<MigrationDeps, 'outOfTime'>,
    record: SchemaRecord | undefined,
    context: Context,
  ): Promise<void> {
    const run = await runMigrations(
      { ...tables, outOfTime: () => context.getRemainingTimeInMillis() < DEADLINE_MARGIN_MS },
      record,
    );
    if (run.pages > 0 || run.pending.length > 0) {
      logger.info(
        run.pending.length > 0
          ? 'migrations under way; the next run goes on'
          : 'migrations finished',
        {
          schema: run.record.schema,
          completed: run.completed,
          pending: run.pending,
          pages: run.pages,
          ...(run.record.running ? { running: run.record.running } : {}),
        },
      );
    }
  }

  async function sweepOnce(context: Context, tickAt: number): Promise<SweeperSummary> {
    const { sweep } = deps.config;
    // One policy, one place: clients (`registrar sweep`, describe) read what this run applies.
    // Recorded every run, so a failure now is retried in a minute: it must not stop the sweep.
    const recorded = { ...sweep, authMode: deps.config.authMode };
    await deps.sweepPolicy?.record(recorded, deps.now()).catch((error: unknown) => {
      logger.warn('could not record the sweep policy; the next run tries again', {
        reason: error instanceof Error ? error.message : String(error),
      });
    });
    let result: SweepResult | undefined;
    const runAt = deps.now();
    try {
      result = await runSweep(deps.store, {
        now: runAt,
        policy: sweep,
        maxDeletes: sweep.maxDeletesPerRun,
        deletesPerSecond: sweep.deletesPerSecond,
        outOfTime: () => context.getRemainingTimeInMillis() < DEADLINE_MARGIN_MS,
        liveness: deps.liveness,
        closeConnection: deps.closeConnection,
        notifyConnection: deps.notifyConnection,
        repeatHeartbeatPasses: true,
        connectSettleMs: deps.config.connectSettleMs,
        heartbeatLanes: deps.config.heartbeatLanes,
        tickAt,
        failStatic: { ...sweep.failStatic, sweepIntervalMs: sweep.sweepIntervalMs },
      });
    } finally {
      // Every run emits Swept, zero included, so a dashboard or alarm sees the sweeper alive.
      recordCount(METRIC.swept, result?.deleted.length ?? 0);
    }
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
    logDisruption(result, sweep.failStatic, runAt);
    const summary: SweeperSummary = {
      deleted: result.deleted.length,
      conflicts: result.conflicts,
      candidatesRead: result.candidatesRead,
      namespacesWithDue: result.namespacesWithDue,
      livenessChecked: result.livenessChecked,
      livenessUnknown: result.livenessUnknown,
      phantomsDropped: result.phantomsDropped,
      silentDropped: result.silentDropped,
      stoppedEarly: result.stoppedEarly,
      failed: result.failed,
      mode: result.disruption?.fleetMode ?? 'normal',
      held: sum(result.held),
      slowed: sum(result.slowed),
      ...heartbeatOf(result),
    };
    // One small put for registrar dashboard's chart of recent runs; it never fails the run.
    await deps.sweepRuns?.record({ at: deps.now(), ...summary }).catch((error: unknown) => {
      logger.warn('could not record the sweep run', { reason: String(error) });
    });
    if (result.failed > 0) {
      // The rest of the run went on; failing the invocation makes the sweeper's Errors alarm
      // see a store that keeps refusing, and the next run retries what failed.
      logger.error('sweep finished with failures; the next run retries them', {
        ...summary,
        reason: result.firstFailure,
      });
      throw new SweepIncompleteError(result.failed, result.firstFailure);
    }
    if (result.stoppedEarly)
      logger.warn('sweep stopped at its deadline; the next run goes on', { ...summary });
    else logger.info('sweep finished', { ...summary });
    return summary;
  }

  return middy<SweeperEvent, SweeperSummary>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(errorsLoggedAndRethrown(logger))
    .handler(onSchedule);
}

/** Some deletes or liveness checks failed; everything else in the run was done. */
export class SweepIncompleteError extends Error {
  constructor(failed: number, first: string | undefined) {
    super(
      `${failed} sweep operation(s) failed and are retried by the next run: ${first ?? 'unknown error'}`,
    );
    this.name = 'SweepIncompleteError';
  }
}

/**
 * Fail static in one line, in the words `registrar sweep status` and the dashboard use (one
 * function decides them: lib/domain/cell-mode.ts): the fleet's mode, and each cell that is
 * slowed or held, with until when. A change of the fleet's word is a warning (the local
 * runtime prints it too); a run that stays slowed or held says so again, so a log search
 * finds the whole episode. `deferred` counts this run's deletions held back or slowed, which
 * may be 0 in a slowed cell (nothing was due yet, or its credit covered them).
 */
function logDisruption(
  result: SweepResult,
  policy: Parameters<typeof describeHoldReason>[1],
  now: number,
): void {
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
function cellsIn(result: SweepResult, mode: 'slowed' | 'held', now: number) {
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

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((total, value) => total + value, 0);
}

export const handler = lazyHandler(createSweeperHandler, sweeperDependencies);
