import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  failureDelay,
  missingGroupDelay,
  refusalDelay,
  rotationDelay,
} from '../../agent/backoff.ts';
import { DEFAULT_TIMING } from '../../agent/config.ts';

const random = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

describe('agent backoff', () => {
  it('full jitter stays within [0, min(60 s, 1 s x 2^(n-1)))', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), random, (failures, r) => {
        const delay = failureDelay(failures, DEFAULT_TIMING, r);
        const ceiling = Math.min(60_000, 1_000 * 2 ** (failures - 1));
        return delay >= 0 && delay < ceiling;
      }),
    );
  });

  it('the window grows with each failure until the 60 s cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => failureDelay(n, DEFAULT_TIMING, 0.999999))).toEqual([
      999, 1999, 3999, 7999, 15999, 31999, 59999, 59999,
    ]);
  });

  it('a refusal always waits at least half of its window, never less than 15 s', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), random, (refusals, r) => {
        const delay = refusalDelay(refusals, DEFAULT_TIMING, r);
        return delay >= 15_000 && delay <= DEFAULT_TIMING.refusalBackoffCapMs;
      }),
    );
  });

  it('retries a missing group (404) within 20 s at most, and never sooner than 2 s', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), random, (refusals, r) => {
        const delay = missingGroupDelay(refusals, DEFAULT_TIMING, r);
        return delay >= 2_000 && delay <= DEFAULT_TIMING.missingGroupRetryMs;
      }),
    );
    // Equal jitter: 2-4 s, 4-8 s, 8-16 s, then 10-20 s.
    expect([1, 2, 3, 4, 9].map((n) => missingGroupDelay(n, DEFAULT_TIMING, 0))).toEqual([
      2_000, 4_000, 8_000, 10_000, 10_000,
    ]);
    expect(missingGroupDelay(9, DEFAULT_TIMING, 0.999999)).toBeLessThan(20_000);
  });

  it('rotates between 75 % and 90 % of the maximum connection age (90 to 108 min of 2 h)', () => {
    expect(rotationDelay(DEFAULT_TIMING, 0)).toBe(90 * 60_000);
    expect(rotationDelay(DEFAULT_TIMING, 0.999999)).toBeLessThan(108 * 60_000);
  });
});
