import type { Tally } from '../../lib/dashboard-server/api-types.ts';
import { cellParts } from './cell-parts.ts';
import { count } from './format.ts';

/**
 * A namespace and zone's entries as one bar, read at a glance down the table: healthy, in
 * service without a verdict, unhealthy, away. The widths are shares of the cell's entries; the
 * bar's name says the same counts in words, for a screen reader and for a test.
 */
const PARTS = [
  ['healthy', 'healthy'],
  ['noVerdict', 'connected without a verdict'],
  ['unhealthy', 'unhealthy'],
  ['away', 'away'],
] as const;

export function CellBar({ tally, where }: { tally: Tally; where: string }) {
  const parts = cellParts(tally);
  const total = Math.max(1, tally.entries);
  const words = PARTS.map(([key, text]) => `${count(parts[key])} ${text}`).join(', ');
  return (
    <div class="cell-bar" role="img" aria-label={`${where}: ${words}`} title={words}>
      {PARTS.filter(([key]) => parts[key] > 0).map(([key]) => (
        <span
          key={key}
          class={`cell-bar-part part-${key}`}
          style={{ width: `${(100 * parts[key]) / total}%` }}
        />
      ))}
    </div>
  );
}
