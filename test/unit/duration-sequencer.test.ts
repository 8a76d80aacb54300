import { describe, expect, it } from 'vitest';
import { committedDurations, slowestFirst } from '../duration-sequencer.ts';

describe('the order test files run in', () => {
  it('runs unknown files first, then the slowest, ties by path', () => {
    expect(
      slowestFirst(['b.test.ts', 'new.test.ts', 'a.test.ts', 'slow.test.ts'], {
        'a.test.ts': 100,
        'b.test.ts': 100,
        'slow.test.ts': 120_000,
      }),
    ).toEqual(['new.test.ts', 'slow.test.ts', 'a.test.ts', 'b.test.ts']);
  });

  it('reads the committed durations: every entry a test file with a time in ms', () => {
    const durations = committedDurations();
    expect(Object.keys(durations).length).toBeGreaterThan(100);
    for (const [path, ms] of Object.entries(durations)) {
      expect(path).toMatch(/^test\/.+\.test\.ts$/);
      expect(ms).toBeGreaterThanOrEqual(0);
    }
  });
});
