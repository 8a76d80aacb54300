import {
  type EntryRecord,
  effectiveHealth,
  isAutoRegistered,
  isConnected,
} from '../domain/entry-record.ts';
import { type LabelSelector, matchesSelector } from '../presentation/label-selector.ts';
import { parseTimestamp } from '../presentation/output.ts';
import { entryItem } from '../presentation/resource-items.ts';
import type {
  CONNECTION_FILTERS,
  EntriesResponse,
  EntryColumn,
  EntryRow,
  HEALTH_FILTERS,
} from './api-types.ts';

/**
 * A namespace's entries as the list shows them, sorted, filtered and paged here on the server:
 * the page gets one page of rows, whatever the namespace's size. The cells are the ones
 * `registrar get we -o wide` prints (cli/commands/resources.ts), so the two never disagree.
 */

export type HealthFilter = (typeof HEALTH_FILTERS)[number];
export type ConnectionFilter = (typeof CONNECTION_FILTERS)[number];

export interface EntryQuery {
  selector: LabelSelector;
  group?: string;
  health?: HealthFilter;
  connection?: ConnectionFilter;
  /** Part of the name, as typed into the search box. */
  name?: string;
  sort: EntryColumn;
  order: 'asc' | 'desc';
  page: number;
  pageSize: number;
}

/** One entry, with what filtering and sorting need computed once per read of the namespace. */
export interface IndexedEntry {
  record: EntryRecord;
  name: string;
  group: string;
  health: HealthFilter;
  connection: ConnectionFilter;
  labels: Record<string, string>;
  /** Sort keys by column; AGE by the age itself, so ascending puts the youngest first. */
  keys: Record<EntryColumn, string | number>;
}

export function indexEntry(record: EntryRecord, now: number): IndexedEntry {
  const item = entryItem(record);
  const {
    table: [name = '', , connected = '', healthy = '', routable = '', group = ''],
    wide: [network = '', locality = '', identity = '', agent = ''],
  } = item.cells(now);
  const created = parseTimestamp(record.entry.metadata.creationTimestamp);
  return {
    record,
    name,
    group,
    health: healthFilterOf(record),
    connection: !isAutoRegistered(record)
      ? 'hand-made'
      : isConnected(record)
        ? 'connected'
        : 'disconnected',
    labels: item.object.metadata.labels ?? {},
    keys: {
      name,
      address: record.entry.spec.address ?? '',
      connected,
      healthy,
      routable,
      group,
      // The age grows as the creation time shrinks; no creation time sorts as the oldest.
      age: created === undefined ? Number.POSITIVE_INFINITY : -created,
      network,
      locality,
      identity,
      agent,
    },
  };
}

/**
 * The health filter follows the `Healthy` verdict of the agent (or of an operator's cordon),
 * not the connection: a disconnected entry's HEALTHY cell says `False (Disconnected)`, and the
 * connection filter is the one that finds those.
 */
function healthFilterOf(record: EntryRecord): HealthFilter {
  const status = effectiveHealth(record)?.status;
  return status === 'True' ? 'healthy' : status === 'False' ? 'unhealthy' : 'unknown';
}

const collator = new Intl.Collator('en', { numeric: true });

/** Names in the table's own order (its sort key), so the first page needs one short Query. */
function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Numbers as numbers, names as the table keeps them, other text as a person reads numbers in it (10.0.0.2 before 10.0.0.12). */
function compare(column: EntryColumn, a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a === b ? 0 : a < b ? -1 : 1;
  if (column === 'name') return byName(String(a), String(b));
  return collator.compare(String(a), String(b));
}

/** The entries sorted by a column (names break ties, so pages never shuffle between reads). */
export function sortEntries(
  entries: readonly IndexedEntry[],
  sort: EntryColumn,
  order: 'asc' | 'desc',
): IndexedEntry[] {
  const sign = order === 'asc' ? 1 : -1;
  return [...entries].sort(
    (a, b) => sign * (compare(sort, a.keys[sort], b.keys[sort]) || byName(a.name, b.name)),
  );
}

export function matches(entry: IndexedEntry, query: EntryQuery): boolean {
  if (query.group !== undefined && entry.group !== query.group) return false;
  if (query.health !== undefined && entry.health !== query.health) return false;
  if (query.connection !== undefined && entry.connection !== query.connection) return false;
  if (query.name !== undefined && !entry.name.includes(query.name)) return false;
  return matchesSelector(query.selector, entry.labels);
}

/** One page of the sorted entries that match, as rows with `get we -o wide`'s cells. */
export function entriesPage(
  namespace: string,
  sorted: readonly IndexedEntry[],
  query: EntryQuery,
  readAt: number,
  now: number,
): EntriesResponse {
  const matched = sorted.filter((entry) => matches(entry, query));
  const pages = Math.max(1, Math.ceil(matched.length / query.pageSize));
  const page = Math.min(query.page, pages);
  const start = (page - 1) * query.pageSize;
  const groups = [...new Set(sorted.map((entry) => entry.group))].sort(collator.compare);
  return {
    namespace,
    total: sorted.length,
    matched: matched.length,
    page,
    pageSize: query.pageSize,
    pages,
    sort: query.sort,
    order: query.order,
    rows: matched.slice(start, start + query.pageSize).map((entry) => entryRow(entry, now)),
    groups,
    readAt,
  };
}

function entryRow(entry: IndexedEntry, now: number): EntryRow {
  const { table, wide } = entryItem(entry.record).cells(now);
  const [
    name = '',
    address = '',
    connected = '',
    healthy = '',
    routable = '',
    group = '',
    age = '',
  ] = table;
  const [network = '', locality = '', identity = '', agent = ''] = wide;
  return {
    name: entry.name,
    cells: {
      name,
      address,
      connected,
      healthy,
      routable,
      group,
      age,
      network,
      locality,
      identity,
      agent,
    },
    labels: entry.labels,
  };
}
