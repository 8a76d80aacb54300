import type { EntryRecord } from '../domain/entry-record.ts';

// The port the dashboard reads a namespace's first page through while it reads the rest
// (dashboard-data.ts); lib/store/dynamodb-entry-pages.ts implements it.

/** The first entries of a namespace by name, read at a cost that does not grow with it. */
export interface FirstEntriesReader {
  firstEntries(namespace: string, limit: number): Promise<EntryRecord[]>;
}
