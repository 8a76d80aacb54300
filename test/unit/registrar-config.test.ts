import { describe, expect, it } from 'vitest';
import { MAX_LIVENESS_WINDOWS, minLivenessIntervalMs, readConfig } from '../../lib/config.ts';

const base = { REGISTRAR_TABLE: 'registry' };

describe('registrar configuration: liveness interval', () => {
  it('refuses an interval that would make each sweep read the index thousands of times', () => {
    // 1.5 x 2 h / 360 = 30 s
    expect(minLivenessIntervalMs(2 * 3_600_000)).toBe(30_000);
    expect(() =>
      readConfig({ ...base, REGISTRAR_LIVENESS_INTERVAL: '1s', REGISTRAR_SWEEP_INTERVAL: '500ms' }),
    ).toThrow(
      `invalid configuration: REGISTRAR_LIVENESS_INTERVAL (value '1s'): must be at least 30s with REGISTRAR_MAX_CONNECTION_AGE 2h: each sweep reads the index once per interval of the 3h stale window, at most ${MAX_LIVENESS_WINDOWS} times`,
    );
  });

  it('accepts the shortest interval allowed, and short ones with a short maximum age', () => {
    const shortest = readConfig({
      ...base,
      REGISTRAR_LIVENESS_INTERVAL: '30s',
      REGISTRAR_SWEEP_INTERVAL: '30s',
    });
    expect(shortest.sweep.livenessIntervalMs).toBe(30_000);
    const short = readConfig({
      ...base,
      REGISTRAR_MAX_CONNECTION_AGE: '1m',
      REGISTRAR_LIVENESS_INTERVAL: '1s',
      REGISTRAR_SWEEP_INTERVAL: '500ms',
    });
    expect(short.sweep.livenessIntervalMs).toBe(1_000);
  });
});
