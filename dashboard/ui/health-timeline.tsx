import type { EventView } from '../api-types.ts';
import { clock } from './format.ts';

/**
 * One entry's story as a strip: from its oldest kept event to now, each stretch coloured by
 * what the registry knew then (healthy, unhealthy, connected without a verdict, away), from the
 * events the registry keeps (its history is bounded, so the strip starts where the events do).
 */
export type Phase = 'healthy' | 'unhealthy' | 'connected' | 'away';

export interface Stretch {
  phase: Phase;
  from: number;
  to: number;
}

const CONNECTS = new Set(['Registered', 'Connected', 'Reconnected', 'Replaced']);
const DEPARTURES = new Set(['Disconnected', 'ConnectionsGone']);

/** The stretches between events, oldest first; each event that changes the phase starts one. */
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

const WORDS: Record<Phase, string> = {
  healthy: 'healthy',
  unhealthy: 'unhealthy',
  connected: 'connected, no verdict',
  away: 'away',
};

export function HealthTimeline({ events, now }: { events: readonly EventView[]; now: number }) {
  const stretches = healthStretches(events, now);
  if (stretches.length === 0) return <p>No connection or health event kept yet.</p>;
  const start = stretches[0]?.from ?? now;
  const span = Math.max(1, now - start);
  const words = stretches.map((s) => `${WORDS[s.phase]} from ${clock(s.from)}`).join('; ');
  return (
    <figure class="timeline">
      <div class="timeline-strip" role="img" aria-label={`Health over time: ${words}`}>
        {stretches.map((s) => (
          <span
            key={s.from}
            class={`timeline-part part-${s.phase}`}
            style={{ width: `${(100 * (s.to - s.from)) / span}%` }}
            title={`${WORDS[s.phase]} from ${clock(s.from)}`}
          />
        ))}
      </div>
      <figcaption class="timeline-axis">
        <span>{clock(start)}</span>
        <span>now</span>
      </figcaption>
    </figure>
  );
}
