/** Times as the page shows them: the reader's local clock, with the date when not today. */
export function clock(at: number | string | null | undefined): string {
  if (at === null || at === undefined) return '—';
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return String(at);
  const time = date.toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  return date.toDateString() === new Date().toDateString()
    ? time
    : `${date.toLocaleDateString()} ${time}`;
}

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
