import { describe, expect, it } from 'vitest';
import { cellParts } from '../../dashboard/ui/cell-parts.ts';
import { COUNT_INCREMENTS, clock, hourMinute } from '../../dashboard/ui/format.ts';
import { healthStretches } from '../../dashboard/ui/health-stretches.ts';
import type { EventView } from '../../lib/dashboard-server/api-types.ts';

/** What the dashboard's pictures are drawn from: the numbers behind each bar and strip. */
const T0 = Date.parse('2026-11-27T22:00:00.000Z');

function event(reason: string, at: number): EventView {
  return { type: 'Normal', reason, at, age: '', message: '', from: 'connect' };
}

describe("an entry's health strip", () => {
  it('starts connected without a verdict, then follows the probe, then the departure', () => {
    const events = [
      event('Unhealthy', T0 + 20_000),
      event('Registered', T0),
      event('Healthy', T0 + 5_000),
      event('Disconnected', T0 + 30_000),
    ];
    expect(healthStretches(events, T0 + 60_000)).toEqual([
      { phase: 'connected', from: T0, to: T0 + 5_000 },
      { phase: 'healthy', from: T0 + 5_000, to: T0 + 20_000 },
      { phase: 'unhealthy', from: T0 + 20_000, to: T0 + 30_000 },
      { phase: 'away', from: T0 + 30_000, to: T0 + 60_000 },
    ]);
  });

  it('keeps the last verdict across a reconnect, and ignores events that change neither', () => {
    const events = [
      event('Registered', T0),
      event('Healthy', T0 + 1_000),
      event('Disconnected', T0 + 2_000),
      event('Reconnected', T0 + 3_000),
      event('TemplateUpdated', T0 + 4_000),
      event('Healthy', T0 + 5_000),
    ];
    expect(healthStretches(events, T0 + 9_000).map((s) => [s.phase, s.from, s.to])).toEqual([
      ['connected', T0, T0 + 1_000],
      ['healthy', T0 + 1_000, T0 + 2_000],
      ['away', T0 + 2_000, T0 + 3_000],
      ['healthy', T0 + 3_000, T0 + 9_000],
    ]);
  });

  it('draws nothing from no event', () => {
    expect(healthStretches([], T0)).toEqual([]);
  });
});

describe("a cell's share bar", () => {
  it('splits the entries into parts that add up to them', () => {
    const tally = { entries: 10, connected: 6, healthy: 3, unhealthy: 1, away: 3, handMade: 1 };
    const parts = cellParts(tally);
    expect(parts).toEqual({ healthy: 3, noVerdict: 3, unhealthy: 1, away: 3 });
    expect(parts.healthy + parts.noVerdict + parts.unhealthy + parts.away).toBe(tally.entries);
  });
});

describe('times and ticks', () => {
  it('shows every time as RFC 3339 in UTC to the second, from a number or an ISO text', () => {
    expect(clock(T0 + 42_123)).toBe('2026-11-27T22:00:42Z');
    expect(clock('2026-11-27T22:00:42.123Z')).toBe('2026-11-27T22:00:42Z');
    expect(clock(null)).toBe('—');
    expect(hourMinute((T0 + 5 * 60_000) / 1000)).toBe('22:05');
  });

  it('puts ticks of a count chart on whole numbers only, from 1 up', () => {
    expect(COUNT_INCREMENTS[0]).toBe(1);
    expect(COUNT_INCREMENTS.every(Number.isInteger)).toBe(true);
    expect(COUNT_INCREMENTS).toEqual([...COUNT_INCREMENTS].sort((a, b) => a - b));
  });
});
