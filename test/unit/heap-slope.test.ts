import { describe, expect, it } from 'vitest';
import { heapSlopePer1000, sustainedHeapSlopePer1000 } from '../../bench/heap-slope.ts';

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

  it('reads a one-time step as no lasting growth, and a steady leak whole', () => {
    // CI's DynamoDB Local readings of `$connect` (KB, after 160 ... 480 invocations).
    const kb = [12516.3, 12516.8, 12518.0, 12518.9, 12540.1, 12543.1, 12543.5, 12545.6, 12545.6];
    const step = kb.map((k, i) => ({ invocations: 160 + i * 40, bytes: k * 1024 }));
    expect(heapSlopePer1000(step)).toBeGreaterThan(64 * 1024);
    expect(sustainedHeapSlopePer1000(step)).toBeLessThan(64 * 1024);
    const leak = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((k) => ({
      invocations: 160 + k * 40,
      bytes: 12 * MB + k * 4_000,
    }));
    expect(sustainedHeapSlopePer1000(leak)).toBeCloseTo(100_000, 6);
  });
});
