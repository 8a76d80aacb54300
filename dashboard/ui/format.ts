/**
 * Times as the page shows them, everywhere: RFC 3339 in UTC to the second
 * (`2026-11-27T22:03:42Z`), as `registrar` and kubectl print them and as the registry stores
 * them, so a time on the page can be compared with one in a log or on the command line. A
 * time the server sends as text (ISO with milliseconds) is shown the same way.
 */
export function clock(at: number | string | null | undefined): string {
  if (at === null || at === undefined) return '—';
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return String(at);
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Hours and minutes in UTC, for a chart's time axis (its day is in the times around it). */
export function hourMinute(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(11, 16);
}

/**
 * The steps a chart of counts may put between its ticks: whole numbers only (a count of 0.25
 * runs means nothing).
 */
export const COUNT_INCREMENTS = [1, 2, 5]
  .flatMap((step) => [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000].map((scale) => step * scale))
  .sort((a, b) => a - b);

export function count(value: number): string {
  return value.toLocaleString('en');
}

export function plural(value: number, one: string, many = `${one}s`): string {
  return `${count(value)} ${value === 1 ? one : many}`;
}

/** The page's palette for charts (the canvas cannot read CSS custom properties). */
export const COLORS = {
  blue: '#2563eb',
  green: '#15803d',
  red: '#b91c1c',
  amber: '#b45309',
  purple: '#7c3aed',
  grey: '#4b5563',
  teal: '#0f766e',
  pink: '#be185d',
} as const;

export const SERIES_COLORS = Object.values(COLORS);
