import type { SchemaRecord } from '../domain/table-schema.ts';

// The ports of the table's schema and its migrations, beside lib/registration/run-migrations.ts,
// which runs them; the adapters (lib/store/dynamodb-schema-store.ts, dynamodb-migrations.ts)
// implement them.

/** Where the table's schema record is kept (`CONFIG / schema`). */
export interface SchemaStore {
  /** Consistent read: a runner must see the progress the last one saved. */
  read(): Promise<SchemaRecord | undefined>;
  /**
   * Writes the record if its revision is still `expected` (undefined: none exists yet), with
   * the revision bumped. 'conflict': another runner wrote first; read again and go on from
   * there.
   */
  write(record: SchemaRecord, expected: number | undefined): Promise<'written' | 'conflict'>;
}

/**
 * One migration. Explicit (a numbered step, recorded when done), idempotent (a page done twice,
 * after a crash before its progress was saved, changes nothing more) and resumable (the cursor
 * of the next page is saved after each page). Never a Scan: pages are Queries of the items it
 * changes.
 */
export interface Migration {
  /** The schema the table has once this is done: one more than the migration before. */
  id: number;
  name: string;
  /** What it changes and why, for `registrar migrate status`. */
  summary: string;
  /** Whether code of older schemas may still run on the table during and after it. */
  keepsOlderReaders: boolean;
  /** One page from `cursor` (absent: the start). No cursor back: this was the last page. */
  step(cursor: string | undefined): Promise<{ cursor?: string; items: number; writes: number }>;
}
