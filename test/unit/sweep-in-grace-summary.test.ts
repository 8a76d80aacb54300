import { describe, expect, it } from 'vitest';
import { inGraceSummary } from '../../cli/commands/sweep.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const MINUTE = 60_000;

describe("registrar sweep's in-grace summary", () => {
  it('says nothing when no departed entry waits', () => {
    expect(inGraceSummary({ count: 0, more: false }, 5 * MINUTE, NOW)).toBe('');
  });

  it('names the count and when the first is due, rounded up to the second', () => {
    expect(
      inGraceSummary(
        { count: 3, more: false, firstDisconnectedAt: NOW - MINUTE + 500 },
        5 * MINUTE,
        NOW,
      ),
    ).toBe('3 departed entries within their grace period, the first due in 4m1s');
    expect(
      inGraceSummary({ count: 1, more: false, firstDisconnectedAt: NOW }, 5 * MINUTE, NOW),
    ).toBe('1 departed entry within its grace period, the first due in 5m');
  });

  it('says "at least" with a + when the count stopped at its limit', () => {
    expect(
      inGraceSummary({ count: 10_000, more: true, firstDisconnectedAt: NOW }, MINUTE, NOW),
    ).toBe('10000+ departed entries within their grace period, the first due in 1m');
  });
});
