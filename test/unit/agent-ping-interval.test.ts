import { describe, expect, it } from 'vitest';
import { pingIntervalMs } from '../../agent/ping-interval.ts';

const FIVE_MIN = 300_000;

describe("the agent's ping interval", () => {
  it('follows the interval the registrar names when it is shorter than the configured one', () => {
    expect(pingIntervalMs({ intervalSeconds: 10, misses: 3 }, FIVE_MIN)).toBe(10_000);
  });

  it('keeps the configured interval when the registrar names none (an older registrar)', () => {
    expect(pingIntervalMs(undefined, FIVE_MIN)).toBe(FIVE_MIN);
    expect(pingIntervalMs(null, FIVE_MIN)).toBe(FIVE_MIN);
  });

  it('keeps a shorter configured interval, and ignores a value under 5 s or not a number', () => {
    expect(pingIntervalMs({ intervalSeconds: 60 }, 30_000)).toBe(30_000);
    expect(pingIntervalMs({ intervalSeconds: 0.5 }, FIVE_MIN)).toBe(FIVE_MIN);
    expect(pingIntervalMs({ intervalSeconds: '10' }, FIVE_MIN)).toBe(FIVE_MIN);
    expect(pingIntervalMs({ intervalSeconds: Number.NaN }, FIVE_MIN)).toBe(FIVE_MIN);
  });
});
