import type { EventView } from '../../lib/dashboard-server/api-types.ts';

/**
 * An entry's events turned into stretches of one phase each (healthy, unhealthy, connected
 * without a verdict, away), oldest first, the last one running to `now`. The registry keeps a
 * bounded history, so the first stretch starts at the oldest kept event.
 */
export type Phase = 'healthy' | 'unhealthy' | 'connected' | 'away';

export interface Stretch {
  phase: Phase;
  from: number;
  to: number;
}

const CONNECTS = new Set(['Registered', 'Connected', 'Reconnected', 'Replaced']);
const DEPARTURES = new Set(['Disconnected', 'ConnectionsGone']);

/** Each event that changes the phase starts a stretch; other events change nothing. */
export function healthStretches(events: readonly EventView[], now: number): Stretch[] {
  const sorted = [...events].sort((a, b) => a.at - b.at);
  const stretches: Stretch[] = [];
  let health: 'healthy' | 'unhealthy' | undefined;
  let away = false;
  for (const event of sorted) {
    if (event.reason === 'Healthy') health = 'healthy';
    else if (event.reason === 'Unhealthy') health = 'unhealthy';
    else if (CONNECTS.has(event.reason)) away = false;
    else if (DEPARTURES.has(event.reason)) away = true;
    else continue;
    const phase: Phase = away ? 'away' : (health ?? 'connected');
    const last = stretches.at(-1);
    if (last?.phase === phase) continue;
    if (last) last.to = event.at;
    stretches.push({ phase, from: event.at, to: now });
  }
  return stretches;
}
