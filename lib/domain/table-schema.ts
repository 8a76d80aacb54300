import { compareVersions, parseReleaseVersion } from './release-version.ts';

/**
 * What the registry table records about its own shape (`CONFIG / schema`): which migrations
 * have run, which release last ran on it, and which code may still run on it. A table without
 * the record is as 0.1 left it: schema 1. Pure: the runner (lib/registration/run-migrations.ts)
 * reads and writes it through a port.
 *
 * Migrations are numbered; a table's schema is the highest one completed (every one before it
 * too). A migration that keeps older readers (the rule: the protocol and the table only grow)
 * leaves `readableFrom` alone, so the release before can still be rolled back to. One that
 * does not raises `readableFrom` to its number before it starts, and code of an older schema
 * then refuses the table instead of misreading it.
 */
export interface SchemaRecord {
  /** The highest migration completed. */
  schema: number;
  /** The oldest schema whose code may run on this table. */
  readableFrom: number;
  /** The newest release that has run on this table. */
  writtenBy: string;
  /** The release that ran on it last, and when (a rollback shows here). */
  lastRunBy: string;
  lastRunAt: number;
  /** The migration under way, with where it stopped. */
  running?: RunningMigration;
  /** Completed migrations, oldest first. */
  history: CompletedMigration[];
  /** Bumped by every write: two runners never overwrite each other's progress. */
  revision: number;
}

export interface RunningMigration {
  id: number;
  name: string;
  /** Where the next page starts (the migration's own cursor); absent: at the beginning. */
  cursor?: string;
  startedAt: number;
  /** Items read and written so far. */
  items: number;
  writes: number;
  by: string;
}

export interface CompletedMigration {
  id: number;
  name: string;
  startedAt: number;
  finishedAt: number;
  items: number;
  writes: number;
  by: string;
}

/** The shape 0.1 left tables in (no record): what the first migration starts from. */
export const BASELINE_SCHEMA = 1;

/** The code that reads the record: its release and the highest migration it knows. */
export interface SchemaReader {
  release: string;
  schema: number;
}

/** A table this code must not run on; the message names both releases and what to do. */
export class IncompatibleTableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IncompatibleTableError';
  }
}

/**
 * Why this code must not run on the table, or undefined when it may. A table whose newer
 * migrations all kept older readers is fine: a rollback is the case this is for.
 */
export function incompatibility(
  record: SchemaRecord | undefined,
  reader: SchemaReader,
): string | undefined {
  if (!record || record.readableFrom <= reader.schema) return undefined;
  return `this table was written by registrar ${record.writtenBy} (schema ${record.schema}), which code older than schema ${record.readableFrom} cannot read; this is registrar ${reader.release} (schema ${reader.schema}): run ${record.writtenBy} or newer, or restore the table from a backup taken before the upgrade (docs/deploy.md, rolling back)`;
}

/** The record of a table that has none yet: as 0.1 left it, now run by `reader`. */
export function baselineRecord(reader: SchemaReader, now: number): SchemaRecord {
  return {
    schema: BASELINE_SCHEMA,
    readableFrom: BASELINE_SCHEMA,
    writtenBy: reader.release,
    lastRunBy: reader.release,
    lastRunAt: now,
    history: [],
    revision: 0,
  };
}

/**
 * The record once `reader` has run on the table: `writtenBy` only ever moves forward (a
 * rollback leaves the newer release named, which is what a refusal must name).
 */
export function stamped(record: SchemaRecord, reader: SchemaReader, now: number): SchemaRecord {
  return {
    ...record,
    writtenBy: newerRelease(record.writtenBy, reader.release),
    lastRunBy: reader.release,
    lastRunAt: now,
  };
}

/** Whether stamping would change who is named (a write worth making), not only the time. */
export function needsStamp(record: SchemaRecord, reader: SchemaReader): boolean {
  return (
    record.lastRunBy !== reader.release ||
    newerRelease(record.writtenBy, reader.release) !== record.writtenBy
  );
}

function newerRelease(a: string, b: string): string {
  const x = parseReleaseVersion(a);
  const y = parseReleaseVersion(b);
  if (!x) return b;
  if (!y) return a;
  return compareVersions(y, x) > 0 ? b : a;
}
