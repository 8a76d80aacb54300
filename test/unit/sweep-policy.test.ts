import { describe, expect, it } from 'vitest';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';
import { ISTIO_API_VERSION } from '../../lib/domain/model.ts';
import {
  isDueForSweep,
  type SweepPolicy,
  sweepCutoffs,
  sweepReason,
} from '../../lib/domain/sweep-policy.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
// Defaults: grace 5 min, max connection age 2 h, so stale after 1.5 x 2 h = 3 h.
const policy: SweepPolicy = { gracePeriodMs: 5 * MINUTE, maxConnectionAgeMs: 2 * HOUR };
const NOW = Date.UTC(2025, 5, 1);

function record(connection: EntryRecord['connection'], autoRegistered = true): EntryRecord {
  return {
    entry: {
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadEntry',
      metadata: { name: 'vm', namespace: 'ns' },
      spec: {},
    },
    ...(autoRegistered ? { autoRegistrationGroup: 'web' } : {}),
    ...(connection ? { connection } : {}),
    revision: 1,
  };
}
const disconnectedAt = (at: number) =>
  record({ controller: 'c', disconnectedAt: at, connectionIds: [] });
const connectedAt = (at: number) =>
  record({ controller: 'c', connectedAt: at, connectionIds: ['x'] });

describe('isDueForSweep', () => {
  it('deletes an entry disconnected for exactly the grace period', () => {
    expect(isDueForSweep(disconnectedAt(NOW - 5 * MINUTE), NOW, policy)).toBe(true);
  });

  it('keeps an entry disconnected for one millisecond less than the grace period', () => {
    expect(isDueForSweep(disconnectedAt(NOW - 5 * MINUTE + 1), NOW, policy)).toBe(false);
  });

  it('deletes a connected entry older than 1.5 x the maximum connection age', () => {
    expect(isDueForSweep(connectedAt(NOW - 3 * HOUR - 1), NOW, policy)).toBe(true);
  });

  it('keeps a connected entry exactly 1.5 x the maximum connection age old (strictly greater)', () => {
    expect(isDueForSweep(connectedAt(NOW - 3 * HOUR), NOW, policy)).toBe(false);
  });

  it('never treats a connect in the future (clock skew) as stale', () => {
    expect(isDueForSweep(connectedAt(NOW + HOUR), NOW, policy)).toBe(false);
  });

  it('never sweeps a hand-made entry, however old its state looks', () => {
    const handMade = record({ controller: 'c', disconnectedAt: 0, connectionIds: [] }, false);
    expect(isDueForSweep(handMade, NOW, policy)).toBe(false);
    expect(isDueForSweep(record(undefined, false), NOW, policy)).toBe(false);
  });

  it('keeps an auto-registered entry without connection state', () => {
    expect(isDueForSweep(record(undefined), NOW, policy)).toBe(false);
  });

  it('names the reason', () => {
    expect(sweepReason(connectedAt(0))).toBe('stale');
    expect(sweepReason(disconnectedAt(0))).toBe('disconnected');
  });
});

describe('sweepCutoffs', () => {
  it('bounds the index queries exactly where isDueForSweep changes its answer', () => {
    const cutoffs = sweepCutoffs(NOW, policy);

    expect(cutoffs).toEqual({
      disconnectedAtOrBefore: NOW - 5 * MINUTE,
      connectedBefore: NOW - 3 * HOUR,
    });
    expect(isDueForSweep(disconnectedAt(cutoffs.disconnectedAtOrBefore), NOW, policy)).toBe(true);
    expect(isDueForSweep(connectedAt(cutoffs.connectedBefore), NOW, policy)).toBe(false);
    expect(isDueForSweep(connectedAt(cutoffs.connectedBefore - 1), NOW, policy)).toBe(true);
  });
});
