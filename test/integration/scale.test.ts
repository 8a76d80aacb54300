import { describe, expect, it } from 'vitest';
import { measureScale } from '../../bench/scale.ts';

/**
 * `npm run bench -- scale` at a small size, for its counts (not its times): every connected VM
 * is checked within one liveness interval, a VM whose `$disconnect` was lost leaves within
 * grace + liveness interval + 2 sweep intervals and one that closed without a close frame
 * within grace + one sweep interval, a mass departure writes no key faster than its share, and
 * the zone counters are exact afterwards. Its own dynalite; the sweeper is the deployed handler,
 * its liveness checks go through the SDK client to the benchmark's stand-in (another process),
 * the rotations through the real `$connect` / `$disconnect` handlers.
 */
describe('fleet scale benchmark, small', () => {
  it('covers every VM, removes crashed ones in time, and keeps counters exact', async () => {
    const vms = 600;
    const r = await measureScale(vms, { backend: 'dynalite', fair: false });
    expect(r.livenessCoveragePct).toBe(100);
    // grace 5 + liveness interval 5 + 2 sweep intervals
    expect(r.worstCrashedStayMinutes).toBeLessThanOrEqual(12);
    // grace 5 + 1 sweep interval
    expect(r.worstClosedStayMinutes).toBeLessThanOrEqual(6);
    expect(r.countersExact).toBe(true);
    // A projector stream batch reads each changed entry once, not its namespace.
    expect(r.projectorReadsPerChangedEntry).toBe(1);
    // 600 departures over 60 s, one namespace: ~10 entry writes a second on its key, each a
    // few WCU at most; the zone counters are spread over 32 keys.
    expect(r.hottestKey).toMatch(/^NS#/);
    expect(r.maxPartitionWcuPerSecond).toBeLessThanOrEqual(3 * Math.ceil(vms / 60));
    // Once per 5-minute interval, plus the crashed VMs' checks: about 12 an hour per VM.
    expect(r.managementCallsPerVmPerHour).toBeLessThanOrEqual(13);
    // Every run was measured, and took CPU.
    expect(r.cpu.maxSeconds).toBeGreaterThan(0);
  }, 300_000);
});
