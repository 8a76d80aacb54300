import { describe, expect, it } from 'vitest';
import { DEFAULT_TIMING } from '../../agent/settings.ts';
import { simulateReconnectStorm } from '../../bench/reconnect-storm.ts';
import { DEFAULTS } from '../../lib/config.ts';
import { parseDuration } from '../../lib/domain/duration.ts';

/**
 * The reconnect storm at small scale (the benchmark runs 100,000): the agent's real backoff
 * against API Gateway's admission of new connections, on a simulated clock. Counts, not times.
 */
describe('reconnect storm', () => {
  const vms = 3_000;
  const admitPerSecond = 100;
  const storm = simulateReconnectStorm({ vms, admitPerSecond, seed: 7 });

  it('brings every VM back, never admitting more than the limit in a second', () => {
    expect(storm.backByMinute.at(-1)).toBe(vms);
    expect(storm.maxAdmittedPerSecond).toBeLessThanOrEqual(admitPerSecond);
    // The limit is the bottleneck: it is used to the full.
    expect(storm.maxAdmittedPerSecond).toBe(admitPerSecond);
  });

  it('is back within vms / admitted per second + the backoff cap', () => {
    expect(storm.boundSeconds).toBe(vms / admitPerSecond + DEFAULT_TIMING.backoffCapMs / 1000);
    expect(storm.allBackSeconds).toBeLessThanOrEqual(storm.boundSeconds);
    // Not faster than the limit allows either.
    expect(storm.allBackSeconds).toBeGreaterThanOrEqual(vms / admitPerSecond - 1);
  });

  it('every refused attempt is retried: attempts = VMs + refusals', () => {
    expect(storm.attempts).toBeGreaterThan(vms);
    expect(storm.backByMinute.every((back, i, all) => i === 0 || back >= (all[i - 1] ?? 0))).toBe(
      true,
    );
  });

  it('at 100,000 VMs and the default 500/s, all are back before the grace period ends', () => {
    const fleet = simulateReconnectStorm({ vms: 100_000, seed: 1 });
    const grace = parseDuration(DEFAULTS.gracePeriod) ?? 0;
    // No entry is disconnected for the grace period, so none is due: the sweeper deletes no
    // one, and fail static has nothing to hold.
    expect(fleet.allBackSeconds * 1000).toBeLessThan(grace);
    expect(fleet.maxAdmittedPerSecond).toBeLessThanOrEqual(500);
  });
});
