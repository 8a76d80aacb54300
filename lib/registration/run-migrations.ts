import {
  baselineRecord,
  IncompatibleTableError,
  incompatibility,
  needsStamp,
  type RunningMigration,
  type SchemaReader,
  type SchemaRecord,
  stamped,
} from '../domain/table-schema.ts';
import type { Migration, SchemaStore } from './schema-store.ts';

export interface MigrationDeps {
  schema: SchemaStore;
  migrations: readonly Migration[];
  release: string;
  now: () => number;
  /** Checked before each page: a run that is out of time saves its cursor and stops. */
  outOfTime: () => boolean;
}

export interface MigrationRun {
  /** The record as this run left it. */
  record: SchemaRecord;
  /** Migrations completed by this run, by name. */
  completed: string[];
  pages: number;
  /** Migrations of this code still to run (a run that stopped at its deadline). */
  pending: string[];
}

/** The schema the code of these migrations writes: the highest one it knows. */
export function codeSchema(migrations: readonly Migration[]): number {
  return Math.max(1, ...migrations.map((migration) => migration.id));
}

/**
 * Reads the record and refuses a table this code must not run on (a rollback past a
 * migration that did not keep older readers): IncompatibleTableError names both releases.
 */
export async function checkTable(
  deps: Pick<MigrationDeps, 'schema' | 'migrations' | 'release'>,
): Promise<SchemaRecord | undefined> {
  const record = await deps.schema.read();
  const problem = incompatibility(record, reader(deps));
  if (problem) throw new IncompatibleTableError(problem);
  return record;
}

/**
 * Records that this release runs on the table, then runs the migrations it has not completed,
 * in order, page by page, saving progress after each page, until they are done or the run is
 * out of time. Several runners (a sweeper run, `registrar migrate run`) may overlap: each save
 * is conditional on the record's revision, and one that lost reads the other's progress and
 * goes on from it; a page done twice is harmless (idempotent).
 */
export async function runMigrations(
  deps: MigrationDeps,
  known?: SchemaRecord,
): Promise<MigrationRun> {
  const me = reader(deps);
  const ordered = [...deps.migrations].sort((a, b) => a.id - b.id);
  const completed: string[] = [];
  let pages = 0;
  let record = known ?? (await checkTable(deps));
  for (;;) {
    const current: SchemaRecord = record ?? baselineRecord(me, deps.now());
    const problem = incompatibility(current, me);
    if (problem) throw new IncompatibleTableError(problem);
    const next = ordered.find((migration) => migration.id > current.schema);
    const stampedRecord = needsStamp(current, me) ? stamped(current, me, deps.now()) : current;
    if (!next || deps.outOfTime()) {
      if (record && stampedRecord === current) return done(current);
      const saved = await save(deps, stampedRecord, record?.revision);
      if (saved) return done(saved);
      record = await deps.schema.read();
      continue;
    }
    if (!next.keepsOlderReaders && stampedRecord.readableFrom < next.id) {
      // Older code must refuse the table before the first item changes, not after.
      const raised = { ...stampedRecord, readableFrom: next.id };
      record = (await save(deps, raised, record?.revision)) ?? (await deps.schema.read());
      continue;
    }
    const progress = stepOf(stampedRecord, next, me.release, deps.now());
    const page = await next.step(progress.cursor);
    pages += 1;
    const advanced = advance(stampedRecord, next, progress, page, deps.now());
    const saved = await save(deps, advanced, record?.revision);
    if (saved) {
      if (advanced.schema === next.id) completed.push(next.name);
      record = saved;
    } else {
      // Another runner saved first: its progress is at least ours (the page was idempotent).
      record = await deps.schema.read();
    }
  }

  function done(final: SchemaRecord): MigrationRun {
    const pending = ordered.filter((m) => m.id > final.schema).map((m) => m.name);
    return { record: final, completed, pages, pending };
  }
}

function reader(deps: Pick<MigrationDeps, 'migrations' | 'release'>): SchemaReader {
  return { release: deps.release, schema: codeSchema(deps.migrations) };
}

/** Where `migration` stands: resumed from the record, or starting now. */
function stepOf(
  record: SchemaRecord,
  migration: Migration,
  release: string,
  now: number,
): RunningMigration {
  if (record.running?.id === migration.id) return record.running;
  return {
    id: migration.id,
    name: migration.name,
    startedAt: now,
    items: 0,
    writes: 0,
    by: release,
  };
}

/** The record after one page: progress saved, or the migration completed. */
function advance(
  record: SchemaRecord,
  migration: Migration,
  progress: RunningMigration,
  page: { cursor?: string; items: number; writes: number },
  now: number,
): SchemaRecord {
  const items = progress.items + page.items;
  const writes = progress.writes + page.writes;
  const { running: _done, ...rest } = record;
  if (page.cursor === undefined) {
    const { cursor: _cursor, ...finished } = progress;
    return {
      ...rest,
      schema: migration.id,
      history: [...record.history, { ...finished, items, writes, finishedAt: now }],
    };
  }
  return { ...rest, running: { ...progress, cursor: page.cursor, items, writes } };
}

async function save(
  deps: MigrationDeps,
  record: SchemaRecord,
  expected: number | undefined,
): Promise<SchemaRecord | undefined> {
  const outcome = await deps.schema.write(record, expected);
  return outcome === 'written' ? { ...record, revision: (expected ?? 0) + 1 } : undefined;
}
