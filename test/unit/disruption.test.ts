import { describe, expect, it } from 'vitest';
import {
  type DisruptionPolicy,
  type DisruptionRecord,
  departureOf,
  evaluateDisruption,
  nextRecord,
  pacingOf,
  refillCredit,
  type ZoneCount,
  zoneOf,
} from '../../lib/domain/disruption.ts';

const MINUTE = 60_000;
const NOW = Date.UTC(2025, 5, 1, 12);
const policy: DisruptionPolicy = {
  threshold: 0.55,
  windowMs: 5 * MINUTE,
  secondaryDeletesPerSecond: 0.1,
  holdBoundMs: 60 * MINUTE,
};

function evaluate(
  zones: ZoneCount[],
  options: { previous?: DisruptionRecord; now?: number; newestConnectAt?: number } = {},
) {
  return evaluateDisruption({
    now: options.now ?? NOW,
    zones,
    newestConnectAt: 'newestConnectAt' in options ? options.newestConnectAt : NOW - 1000,
    previous: options.previous,
    policy,
  });
}

describe('departureOf', () => {
  it('reads a close 1000 and a client 1001 as clean', () => {
    expect(departureOf(1000, 'agent closing')).toBe('clean');
    expect(departureOf(1000, '')).toBe('clean');
    expect(departureOf(1001, 'shutting down')).toBe('clean');
    // A close frame without a code: the peer closed on purpose.
    expect(departureOf(1005, '')).toBe('clean');
  });

  it("reads no close frame (1006), errors and API Gateway's own Going away as abnormal", () => {
    expect(departureOf(1006, 'Connection closed abnormally')).toBe('abnormal');
    expect(departureOf(1011, 'internal error')).toBe('abnormal');
    expect(departureOf(1001, 'Going away')).toBe('abnormal');
    expect(departureOf(undefined)).toBe('abnormal');
    expect(departureOf(null, null)).toBe('abnormal');
  });
});

describe('zoneOf', () => {
  it('takes region/zone of a locality and names entries without one', () => {
    expect(zoneOf('us-east-1/us-east-1a/rack-7')).toBe('us-east-1/us-east-1a');
    expect(zoneOf('us-east-1/us-east-1a')).toBe('us-east-1/us-east-1a');
    expect(zoneOf('us-east-1')).toBe('us-east-1');
    expect(zoneOf(undefined)).toBe('-');
  });
});

describe('evaluateDisruption', () => {
  it('stays normal below the threshold', () => {
    const state = evaluate([{ zone: 'a', connected: 46, away: 54 }]);
    expect(state.mode).toBe('normal');
    expect(state.zones[0]?.disrupted).toBe(false);
  });

  it('slows one zone above the threshold while another is fine', () => {
    const state = evaluate([
      { zone: 'a', connected: 40, away: 60 },
      { zone: 'b', connected: 100, away: 0 },
    ]);
    expect(state.mode).toBe('normal');
    expect(pacingOf(state, 'a')).toBe('slowed');
    expect(pacingOf(state, 'b')).toBe('normal');
  });

  it('holds when every zone with entries is disrupted, ignoring empty zones', () => {
    const state = evaluate([
      { zone: 'a', connected: 0, away: 10 },
      { zone: 'b', connected: 4, away: 6 },
      { zone: 'c', connected: 0, away: 0 },
    ]);
    expect(state).toMatchObject({
      mode: 'held',
      reason: 'all-zones-disrupted',
      since: NOW,
      holdSince: NOW,
      holdUntil: NOW + 60 * MINUTE,
      away: 16,
    });
    expect(pacingOf(state, 'a')).toBe('held');
  });

  it('holds when entries went away abnormally and nobody connected for the window', () => {
    const zones = [
      { zone: 'a', connected: 90, away: 10 },
      { zone: 'b', connected: 100, away: 0 },
    ];
    expect(evaluate(zones, { newestConnectAt: NOW - 5 * MINUTE - 1 }).reason).toBe('no-connects');
    // No connected entry to read a connect from: the counters drifted, the shares decide.
    expect(evaluate(zones, { newestConnectAt: undefined }).mode).toBe('normal');
    expect(evaluate(zones, { newestConnectAt: NOW - 5 * MINUTE }).mode).toBe('normal');
  });

  it('measures a zone against its largest recent population: VMs that left cleanly still count', () => {
    // 10 VMs; 8 leave cleanly, 2 crash: 2 of 10 went away abnormally, not 2 of 2.
    const before = evaluate([{ zone: 'a', connected: 10, away: 0 }]);
    const after = evaluate([{ zone: 'a', connected: 0, away: 2 }], {
      previous: nextRecord(before, {}, NOW),
      now: NOW + MINUTE,
    });
    expect(after.zones[0]).toMatchObject({ share: 0.2, disrupted: false });
    expect(after.mode).toBe('normal');
    // Without the earlier run (or once it is older than the lookback), 2 of 2.
    const forgotten = evaluateDisruption({
      now: NOW + 6 * MINUTE,
      zones: [{ zone: 'a', connected: 0, away: 2 }],
      newestConnectAt: NOW,
      previous: nextRecord(before, {}, NOW),
      policy,
      lookbackMs: 5 * MINUTE,
    });
    expect(forgotten.zones[0]?.share).toBe(1);
  });

  it('reads a quiet window as an outage only in a fleet large enough to have rotated in it', () => {
    const quiet = { newestConnectAt: NOW - 10 * MINUTE, policy, now: NOW, previous: undefined };
    // 100 VMs rotating at least every 2 h: about 4 connects expected in 5 min, below 5.
    const small = evaluateDisruption({
      ...quiet,
      zones: [{ zone: 'a', connected: 99, away: 1 }],
      maxConnectionAgeMs: 120 * MINUTE,
    });
    expect(small.mode).toBe('normal');
    // 200 VMs: about 8 expected, and none came: an outage.
    const large = evaluateDisruption({
      ...quiet,
      zones: [{ zone: 'a', connected: 197, away: 3 }],
      maxConnectionAgeMs: 120 * MINUTE,
    });
    expect(large).toMatchObject({ mode: 'held', reason: 'no-connects' });
  });

  it('leaves a fleet with nobody connected to the zone shares, not to the quiet window', () => {
    // Every VM is gone: 8 left cleanly (no longer counted), 2 crashed; no connect can be read.
    const state = evaluateDisruption({
      now: NOW,
      zones: [
        { zone: 'a', connected: 0, away: 1 },
        { zone: 'b', connected: 0, away: 1 },
      ],
      newestConnectAt: undefined,
      previous: {
        ...nextRecord(evaluate([{ zone: 'a', connected: 5, away: 0 }]), {}, NOW - MINUTE),
        population: [{ at: NOW - MINUTE, zones: { a: 5, b: 5 } }],
      },
      policy,
    });
    expect(state.mode).toBe('normal');
  });

  it('does not hold for one or two VMs away, even when they are all of their zones', () => {
    expect(evaluate([{ zone: 'a', connected: 0, away: 1 }]).mode).toBe('normal');
    expect(evaluate([{ zone: 'a', connected: 0, away: 2 }]).mode).toBe('normal');
    expect(evaluate([{ zone: 'a', connected: 0, away: 3 }]).mode).toBe('held');
    // The zone itself still counts as disrupted: its deletions slow down.
    expect(pacingOf(evaluate([{ zone: 'a', connected: 0, away: 2 }]), 'a')).toBe('slowed');
  });

  it('does not hold a quiet fleet with nobody away', () => {
    const state = evaluate([{ zone: 'a', connected: 3, away: 0 }], { newestConnectAt: undefined });
    expect(state.mode).toBe('normal');
  });

  it('keeps the start of a hold across runs, and resumes normal pacing at its bound', () => {
    const zones = [{ zone: 'a', connected: 0, away: 10 }];
    const first = evaluate(zones);
    const record = nextRecord(first, {}, NOW);

    const later = evaluate(zones, { previous: record, now: NOW + 59 * MINUTE });
    expect(later).toMatchObject({ mode: 'held', since: NOW, holdSince: NOW });

    const expired = evaluate(zones, { previous: record, now: NOW + 60 * MINUTE });
    expect(expired).toMatchObject({ mode: 'hold-expired', since: NOW + 60 * MINUTE });
    expect(pacingOf(expired, 'a')).toBe('normal');
  });

  it('ends the hold when the VMs are back, and a later hold starts afresh', () => {
    const held = nextRecord(evaluate([{ zone: 'a', connected: 0, away: 10 }]), {}, NOW);
    const back = evaluate([{ zone: 'a', connected: 10, away: 0 }], {
      previous: held,
      now: NOW + MINUTE,
    });
    expect(back.mode).toBe('normal');
    const again = evaluate([{ zone: 'a', connected: 0, away: 10 }], {
      previous: nextRecord(back, {}, NOW + MINUTE),
      now: NOW + 2 * MINUTE,
    });
    expect(again).toMatchObject({ mode: 'held', holdSince: NOW + 2 * MINUTE });
  });

  it("releases on the operator's word until the disruption ends", () => {
    const zones = [{ zone: 'a', connected: 0, away: 10 }];
    const held = nextRecord(evaluate(zones), {}, NOW);
    const released = evaluate(zones, {
      previous: { ...held, releasedAt: NOW + 1 },
      now: NOW + MINUTE,
    });
    expect(released).toMatchObject({ mode: 'released', releasedAt: NOW + 1 });
    expect(pacingOf(released, 'a')).toBe('normal');

    const over = evaluate([{ zone: 'a', connected: 10, away: 0 }], {
      previous: nextRecord(released, {}, NOW + MINUTE),
      now: NOW + 2 * MINUTE,
    });
    expect(over.mode).toBe('normal');
    expect(nextRecord(over, {}, NOW + 2 * MINUTE).releasedAt).toBeUndefined();
  });

  it('keeps a disrupted zone slowed while any of its entries is away, though deletions thin it', () => {
    const first = evaluate([
      { zone: 'a', connected: 8, away: 12 },
      { zone: 'b', connected: 9, away: 0 },
    ]);
    const thinned = evaluate(
      [
        { zone: 'a', connected: 8, away: 6 },
        { zone: 'b', connected: 9, away: 0 },
      ],
      {
        previous: nextRecord(first, {}, NOW),
      },
    );
    expect(pacingOf(thinned, 'a')).toBe('slowed');
    const over = evaluate([{ zone: 'a', connected: 8, away: 0 }], {
      previous: nextRecord(thinned, {}, NOW),
    });
    expect(over.zones[0]?.disrupted).toBe(false);
  });

  it('keeps an expired hold at normal pacing until nothing is away, and ends a hold once most VMs are back', () => {
    const zones = [{ zone: 'a', connected: 0, away: 10 }];
    const expired = nextRecord(
      evaluate(zones, { now: NOW + 61 * MINUTE, previous: nextRecord(evaluate(zones), {}, NOW) }),
      {},
      NOW,
    );
    expect(expired.mode).toBe('hold-expired');
    const thinned = evaluate([{ zone: 'a', connected: 0, away: 3 }], { previous: expired });
    expect(thinned.mode).toBe('hold-expired');
    expect(pacingOf(thinned, 'a')).toBe('normal');

    const held = nextRecord(evaluate([{ zone: 'a', connected: 0, away: 10 }]), {}, NOW);
    const mostlyBack = evaluate([{ zone: 'a', connected: 9, away: 1 }], { previous: held });
    expect(mostlyBack.mode).toBe('normal');
    // The last one left waits at the zone's slowed pace.
    expect(pacingOf(mostlyBack, 'a')).toBe('slowed');
  });

  it('reads counters that drifted below zero as zero', () => {
    const state = evaluate([{ zone: 'a', connected: -2, away: 3 }]);
    expect(state.zones[0]).toMatchObject({ connected: 0, away: 3, share: 1 });
  });
});

describe('refillCredit', () => {
  const slowed = evaluate([
    { zone: 'a', connected: 40, away: 60 },
    { zone: 'b', connected: 100, away: 0 },
  ]);

  it('earns the secondary rate from run to run, capped at one interval', () => {
    const first = refillCredit(slowed, undefined, NOW, { ...policy, sweepIntervalMs: MINUTE });
    // A zone that just became disrupted starts at one deletion, plus one interval's 6.
    expect(first).toEqual({ a: 6 });
    const record = nextRecord(slowed, { a: 0.5 }, NOW);
    expect(
      refillCredit(slowed, record, NOW + 30_000, { ...policy, sweepIntervalMs: MINUTE }),
    ).toEqual({ a: 3.5 });
    expect(
      refillCredit(slowed, record, NOW + 60 * MINUTE, { ...policy, sweepIntervalMs: MINUTE }),
    ).toEqual({ a: 6 });
  });
});
