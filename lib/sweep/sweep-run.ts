import type { SchemaRecord } from '../domain/table-schema.ts';
import { logger, METRIC, recordCount } from '../observability.ts';
import { checkTable, type MigrationDeps, runMigrations } from '../registration/run-migrations.ts';
import { runSweep, type SweepResult } from '../registration/sweep.ts';
import { RELEASE } from '../release.ts';
import { underLaneLease } from './sweep-lease.ts';
import { reportSweep, sum } from './sweep-report.ts';
import {
  laneOptions,
  outOfTime,
  type SweeperInvocation,
  type SweepRunDependencies,
} from './sweep-run-dependencies.ts';
import { EMPTY_SUMMARY, heartbeatOf, type SweeperSummary } from './sweeper-summary.ts';

/**
 * Lane 0's tick: deletes entries disconnected past the grace period and stale ones, checks
 * the holders of connected entries with API Gateway, and runs pending migrations with the time
 * left, under the sweep's lease. A failure propagates so the invocation fails and the sweeper
 * alarm sees it; the next run (a minute later) picks up where this one stopped. Each run stops
 * before its deadline, whatever is still due.
 */
export function runSweepTick(
  deps: SweepRunDependencies,
  invocation: SweeperInvocation,
): Promise<SweeperSummary> {
  return underLaneLease(deps, invocation, {
    skipped: () => ({ ...EMPTY_SUMMARY, mode: 'skipped' }),
    run: async () => {
      // A table written by a release this code cannot read (a rollback past a migration that
      // did not keep older readers) is refused before anything is deleted: the invocation
      // fails, naming both releases, and the sweeper's error alarm fires.
      const tables = schemaDeps(deps);
      const record = await checkTable(tables);
      const summary = await sweepOnce(deps, invocation);
      await migrateInSpareTime(tables, record, invocation);
      return summary;
    },
  });
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

type TableDeps = Omit<MigrationDeps, 'outOfTime'>;

function schemaDeps(deps: SweepRunDependencies): TableDeps {
  return { schema: deps.schema, migrations: deps.migrations, release: RELEASE, now: deps.now };
}

async function sweepOnce(
  deps: SweepRunDependencies,
  invocation: SweeperInvocation,
): Promise<SweeperSummary> {
  const { sweep } = deps.config;
  // One policy, one place: clients (`registrar sweep`, describe) read what this run applies.
  // Recorded every run, so a failure now is retried in a minute: it must not stop the sweep.
  const recorded = { ...sweep, authMode: deps.config.authMode };
  await deps.sweepPolicy.record(recorded, deps.now()).catch((error: unknown) => {
    logger.warn('could not record the sweep policy; the next run tries again', {
      reason: error instanceof Error ? error.message : String(error),
    });
  });
  let result: SweepResult | undefined;
  const runAt = deps.now();
  try {
    result = await runSweep(deps.store, {
      ...laneOptions(deps, invocation, runAt),
      maxDeletes: sweep.maxDeletesPerRun,
      failStatic: { ...sweep.failStatic, sweepIntervalMs: sweep.sweepIntervalMs },
    });
  } finally {
    // Every run emits Swept, zero included, so a dashboard or alarm sees the sweeper alive.
    recordCount(METRIC.swept, result?.deleted.length ?? 0);
  }
  reportSweep(result, sweep.failStatic, runAt);
  const summary = summaryOf(result);
  // One small put for registrar dashboard's chart of recent runs; it never fails the run.
  await deps.sweepRuns.record({ at: deps.now(), ...summary }).catch((error: unknown) => {
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

function summaryOf(result: SweepResult): SweeperSummary {
  return {
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
}

/**
 * After the sweep, with the time left: records that this release runs on the table and runs
 * pending migrations a page at a time, resuming where the last run stopped. A failure fails
 * the invocation (the sweeper's error alarm); the next run resumes.
 */
async function migrateInSpareTime(
  tables: TableDeps,
  record: SchemaRecord | undefined,
  invocation: SweeperInvocation,
): Promise<void> {
  const run = await runMigrations({ ...tables, outOfTime: outOfTime(invocation) }, record);
  if (run.pages > 0 || run.pending.length > 0) {
    logger.info(
      run.pending.length > 0 ? 'migrations under way; the next run goes on' : 'migrations finished',
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
