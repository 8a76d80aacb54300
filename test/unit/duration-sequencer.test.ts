import { describe, expect, it } from 'vitest';
import { committedDurations, orderOf, slowestFirst } from '../duration-sequencer.ts';
import { durationsOf, mergeDurations } from '../record-durations.ts';

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

  it('weighs a file by the longest time an input gives it: a beforeAll counts', () => {
    // vitest's results time a file from its first test to its last; the CPU lines from its
    // first hook to its last, so a file that works in beforeAll is long only in the second.
    const results = JSON.stringify({
      testResults: [
        { name: '/run/test/integration/heap.test.ts', startTime: 1_000, endTime: 1_003 },
        { name: '/run/test/unit/quick.test.ts', startTime: 5_000, endTime: 5_040.4 },
      ],
    });
    const cpuLines = [
      '{"file":"test/integration/heap.test.ts","backend":"dynalite","cpuS":47,"wallS":53.142}',
      '{"file":"test/integration/heap.test.ts","backend":"dynamodb-local","cpuS":40,"wallS":50}',
      '{"file":"test/unit/quick.test.ts","backend":"dynalite","cpuS":0,"wallS":0.01}',
      '',
    ].join('\n');
    const merged = mergeDurations([
      durationsOf('/run/.test-results/vitest.json', results),
      durationsOf('/tmp/cpu.jsonl', cpuLines),
    ]);
    expect(merged).toEqual({
      'test/integration/heap.test.ts': 53_142,
      'test/unit/quick.test.ts': 40,
    });
    expect(Object.keys(merged)).toEqual([
      'test/integration/heap.test.ts',
      'test/unit/quick.test.ts',
    ]);
  });

  it('reads REGISTRAR_TEST_ORDER, slowest first unless told, naming a value it does not know', () => {
    expect(orderOf(undefined)).toBe('slowest-first');
    expect(orderOf('')).toBe('slowest-first');
    expect(orderOf('shortest-first')).toBe('shortest-first');
    expect(() => orderOf('fastest')).toThrow(
      "REGISTRAR_TEST_ORDER must be 'slowest-first' or 'shortest-first'; got 'fastest'",
    );
  });
});
