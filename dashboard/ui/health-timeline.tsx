import type { EventView } from '../../lib/dashboard-server/api-types.ts';
import { clock } from './format.ts';
import { healthStretches, type Phase } from './health-stretches.ts';

const WORDS: Record<Phase, string> = {
  healthy: 'healthy',
  unhealthy: 'unhealthy',
  connected: 'connected, no verdict',
  away: 'away',
};

/**
 * One entry's story as a strip: from its oldest kept event to now, each stretch coloured by
 * what the registry knew then (health-stretches.ts).
 */
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
        <span class="timeline-legend" aria-hidden="true">
          {(Object.keys(WORDS) as Phase[]).map((phase) => (
            <span key={phase}>
              <span class={`swatch part-${phase}`} /> {WORDS[phase]}
            </span>
          ))}
        </span>
        <span>now</span>
      </figcaption>
    </figure>
  );
}
