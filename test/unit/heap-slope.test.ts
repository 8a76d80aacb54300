import { describe, expect, it } from 'vitest';
import { heapSlopePer1000 } from '../../bench/heap-slope.ts';

const MB = 1024 * 1024;

describe('heap slope (Theil-Sen, bytes per 1,000 invocations)', () => {
  it('reads a steady growth whole', () => {
    const points = [0, 1, 2, 3, 4, 5].map((k) => ({
      invocations: 500 + k * 250,
      bytes: 30 * MB + k * 25_000,
    }));
    expect(heapSlopePer1000(points)).toBeCloseTo(100_000, 6);
  });

  it('is not moved by one reading caught high on a flat heap', () => {
    const bytes = [30, 30, 31.5, 30, 30, 30, 30].map((mb) => mb * MB);
    const points = bytes.map((b, k) => ({ invocations: (k + 1) * 250, bytes: b }));
    expect(heapSlopePer1000(points)).toBe(0);
  });

  it('is 0 with fewer than two readings', () => {
    expect(heapSlopePer1000([])).toBe(0);
    expect(heapSlopePer1000([{ invocations: 100, bytes: MB }])).toBe(0);
  });
});
