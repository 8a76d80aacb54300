import type { Tally } from '../../lib/dashboard-server/api-types.ts';

/**
 * A cell's entries split into the parts its bar draws, which add up to its entries: healthy,
 * in service without a verdict, unhealthy (connected and hand-made entries, by their Healthy
 * condition), and away.
 */
export function cellParts(tally: Tally): {
  healthy: number;
  noVerdict: number;
  unhealthy: number;
  away: number;
} {
  const inService = tally.connected + tally.handMade;
  return {
    healthy: tally.healthy,
    noVerdict: Math.max(0, inService - tally.healthy - tally.unhealthy),
    unhealthy: tally.unhealthy,
    away: tally.away,
  };
}
