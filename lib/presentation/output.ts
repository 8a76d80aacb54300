import { createRequire } from 'node:module';

/**
 * How the CLI prints, kept apart from what it prints: kubectl's table layout and ages, and
 * the json/yaml shapes that `apply -f` reads back.
 */

/** Columns padded to the widest cell and three spaces apart, as kubectl's tabwriter does. */
export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const all = [headers, ...rows];
  return formatRows(all, columnWidths(all));
}

/** The width of each column: its widest cell. */
export function columnWidths(rows: readonly (readonly string[])[]): number[] {
  const columns = Math.max(0, ...rows.map((row) => row.length));
  return Array.from({ length: columns }, (_, column) =>
    Math.max(0, ...rows.map((row) => (row[column] ?? '').length)),
  );
}

/**
 * Rows with each cell but the last padded to at least `widths`: `get --watch` prints later
 * rows under the first table's columns (a longer cell pushes only its own row).
 */
export function formatRows(
  rows: readonly (readonly string[])[],
  widths: readonly number[],
): string {
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0),
      )
      .join('   ');
  return rows.map((row) => `${line(row)}\n`).join('');
}

/**
 * Age as kubectl shows it (apimachinery's `duration.HumanDuration`): exact while small, then
 * coarser: 90s, 5m30s, 45m, 2h30m, 20h, 4d5h, 30d, 2y10d. Up to a second in the future
 * is clock skew and shows as 0s; more is `<invalid>`.
 */
export function formatAge(since: number | undefined, now: number): string {
  if (since === undefined || Number.isNaN(since)) return '<unknown>';
  const seconds = Math.trunc((now - since) / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) return withRest(minutes, 'm', seconds % 60, 's');
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) return withRest(hours, 'h', minutes % 60, 'm');
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) return withRest(days, 'd', hours % 24, 'h');
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (hours < 24 * 365 * 8) return withRest(years, 'y', days % 365, 'd');
  return `${years}y`;
}

function withRest(count: number, unit: string, rest: number, restUnit: string): string {
  return rest === 0 ? `${count}${unit}` : `${count}${unit}${rest}${restUnit}`;
}

/** RFC 3339 in whole seconds, as kubectl prints timestamps. */
export function formatTimestamp(at: number): string {
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Parses an RFC 3339 timestamp to epoch milliseconds; undefined when absent or unreadable. */
export function parseTimestamp(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : at;
}

/** What kubectl prints for several objects: a `v1` List. */
export function asList(items: readonly unknown[]): {
  apiVersion: 'v1';
  kind: 'List';
  items: unknown[];
} {
  return { apiVersion: 'v1', kind: 'List', items: [...items] };
}

/** JSON indented by four spaces, as `kubectl get -o json` prints it. */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 4)}\n`;
}

// yaml is required when YAML is printed, not imported with this module: `get` prints a table
// far more often, and loading yaml costs it ~20 ms (issue 17).
const require = createRequire(import.meta.url);

export function toYaml(value: unknown): string {
  const { stringify } = require('yaml') as typeof import('yaml');
  return stringify(value);
}

/** Labels as kubectl shows them in one cell: `app=web,tier=front`, or `<none>`. */
export function formatLabels(labels: Record<string, string> | undefined): string {
  const pairs = Object.entries(labels ?? {}).map(([key, value]) => `${key}=${value}`);
  return pairs.length === 0 ? '<none>' : pairs.join(',');
}
