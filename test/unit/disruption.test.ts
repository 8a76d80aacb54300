import { describe, expect, it } from 'vitest';
import {
  cellKey,
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
const NS = 'shop';
const A = cellKey(NS, 'a');
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
    const state = evaluate([{ namespace: NS, zone: 'a', connected: 46, away: 54 }]);
    expect(state.mode).toBe('normal');
    expect(state.zones[0]?.disrupted).toBe(false);
  });

  it('slows one zone above the threshold while another is fine', () => {
    const state = evaluate([
      { namespace: NS, zone: 'a', connected: 40, away: 60 },
      { namespace: NS, zone: 'b', connected: 100, away: 0 },
    ]);
    expect(state.mode).toBe('normal');
    expect(pacingOf(state, NS, 'a', NOW)).toBe('slowed');
    expect(pacingOf(state, NS, 'b', NOW)).toBe('normal');
  });

  it('holds when every zone with entries is disrupted, ignoring empty zones', () => {
    const state = evaluate([
      { namespace: NS, zone: 'a', connected: 0, away: 10 },
      { namespace: NS, zone: 'b', connected: 4, away: 6 },
      { namespace: NS, zone: 'c', connected: 0, away: 0 },
    ]);
    expect(state).toMatchObject({
      mode: 'held',
      reason: 'all-zones-disrupted',
      since: NOW,
      holdSince: NOW,
      holdUntil: NOW + 60 * MINUTE,
      away: 16,
    });
    expect(pacingOf(state, NS, 'a', NOW)).toBe('held');
  });

  it('holds when entries went away abnormally and nobody connected for the window', () => {
    const zones = [
      { namespace: NS, zone: 'a', connected: 90, away: 10 },
      { namespace: NS, zone: 'b', connected: 100, away: 0 },
    ];
    expect(evaluate(zones, { newestConnectAt: NOW - 5 * MINUTE - 1 }).reason).toBe('no-connects');
    // No connected entry to read a connect from: the counters drifted, the shares decide.
    expect(evaluate(zones, { newestConnectAt: undefined }).mode).toBe('normal');
    expect(evaluate(zones, { newestConnectAt: NOW - 5 * MINUTE }).mode).toBe('normal');
  });

  it('measures a zone against its largest recent population: VMs that left cleanly still count', () => {
    // 10 VMs; 8 leave cleanly, 2 crash: 2 of 10 went away abnormally, not 2 of 2.
    const before = evaluate([{ namespace: NS, zone: 'a', connected: 10, away: 0 }]);
    const after = evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 2 }], {
      previous: nextRecord(before, {}, NOW),
      now: NOW + MINUTE,
    });
    expect(after.zones[0]).toMatchObject({ share: 0.2, disrupted: false });
    expect(after.mode).toBe('normal');
    // Without the earlier run (or once it is older than the lookback), 2 of 2.
    const forgotten = evaluateDisruption({
      now: NOW + 6 * MINUTE,
      zones: [{ namespace: NS, zone: 'a', connected: 0, away: 2 }],
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
      zones: [{ namespace: NS, zone: 'a', connected: 99, away: 1 }],
      maxConnectionAgeMs: 120 * MINUTE,
    });
    expect(small.mode).toBe('normal');
    // 200 VMs: about 8 expected, and none came: an outage.
    const large = evaluateDisruption({
      ...quiet,
      zones: [{ namespace: NS, zone: 'a', connected: 197, away: 3 }],
      maxConnectionAgeMs: 120 * MINUTE,
    });
    expect(large).toMatchObject({ mode: 'held', reason: 'no-connects' });
  });

  it('leaves a fleet with nobody connected to the zone shares, not to the quiet window', () => {
    // Every VM is gone: 8 left cleanly (no longer counted), 2 crashed; no connect can be read.
    const state = evaluateDisruption({
      now: NOW,
      zones: [
        { namespace: NS, zone: 'a', connected: 0, away: 1 },
        { namespace: NS, zone: 'b', connected: 0, away: 1 },
      ],
      newestConnectAt: undefined,
      previous: {
        ...nextRecord(
          evaluate([{ namespace: NS, zone: 'a', connected: 5, away: 0 }]),
          {},
          NOW - MINUTE,
        ),
        peaks: { [A]: [[NOW - MINUTE, 5]], [cellKey(NS, 'b')]: [[NOW - MINUTE, 5]] },
      },
      policy,
    });
    expect(state.mode).toBe('normal');
  });

  it('does not hold for one or two VMs away, even when they are all of their zones', () => {
    expect(evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 1 }]).mode).toBe('normal');
    expect(evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 2 }]).mode).toBe('normal');
    expect(evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 3 }]).mode).toBe('held');
    // Nor do they slow their cell down: two crashed VMs are their own trouble.
    expect(
      pacingOf(evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 2 }]), NS, 'a', NOW),
    ).toBe('normal');
    expect(
      pacingOf(evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 3 }]), NS, 'a', NOW),
    ).not.toBe('normal');
  });

  it('counts the clean leavers still registered in the population, with no earlier run to remember it', () => {
    // Ten VMs stop while the sweeper's state writes fail (no peak recorded): seven
    // `$disconnect`s land, three are lost and found gone. The seven are still registered
    // until swept: three of ten went away abnormally, not three of three.
    const state = evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 3, left: 7 }], {
      previous: undefined,
    });
    expect(state.zones[0]).toMatchObject({ share: 0.3, disrupted: false });
    expect(state.mode).toBe('normal');
    // Counted as such, without them, the three are the whole cell: held.
    const without = evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 3 }]);
    expect(without.mode).toBe('held');
    // The population they made is remembered after they are swept.
    const swept = evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 3, left: 0 }], {
      previous: nextRecord(state, {}, NOW),
      now: NOW + MINUTE,
    });
    expect(swept.zones[0]?.share).toBe(0.3);
    // A real outage is still one: one clean leaver beside three lost VMs is 3 of 4.
    const outage = evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 3, left: 1 }]);
    expect(outage.mode).toBe('held');
  });

  it('does not slow the one abnormal leaver of a fleet whose population was never recorded', () => {
    // The sweeper's state writes failed while ten VMs were connected (no peak recorded); nine
    // left cleanly and were deleted, one left abnormally: it is 1 of 1, and yet its own
    // trouble, deleted at the normal pace after its grace period.
    const state = evaluate([{ namespace: NS, zone: '-', connected: 0, away: 1 }], {
      previous: undefined,
    });
    expect(state.zones[0]?.disrupted).toBe(false);
    expect(pacingOf(state, NS, '-', NOW)).toBe('normal');
    // A cell already disrupted with three away stays slowed while one of them is left.
    const slowed = evaluate([{ namespace: NS, zone: '-', connected: 0, away: 3 }]);
    const record = nextRecord(slowed, {}, NOW);
    const thinned = evaluate([{ namespace: NS, zone: '-', connected: 0, away: 1 }], {
      previous: record,
      now: NOW + 10_000,
    });
    expect(thinned.zones[0]?.disrupted).toBe(true);
  });

  it('does not hold a quiet fleet with nobody away', () => {
    const state = evaluate([{ namespace: NS, zone: 'a', connected: 3, away: 0 }], {
      newestConnectAt: undefined,
    });
    expect(state.mode).toBe('normal');
  });

  it('keeps the start of a hold across runs, and resumes normal pacing at its bound', () => {
    const zones = [{ namespace: NS, zone: 'a', connected: 0, away: 10 }];
    const first = evaluate(zones);
    const record = nextRecord(first, {}, NOW);

    const later = evaluate(zones, { previous: record, now: NOW + 59 * MINUTE });
    expect(later).toMatchObject({ mode: 'held', since: NOW, holdSince: NOW });

    const expired = evaluate(zones, { previous: record, now: NOW + 60 * MINUTE });
    expect(expired).toMatchObject({ mode: 'hold-expired', since: NOW + 60 * MINUTE });
    expect(pacingOf(expired, NS, 'a', NOW)).toBe('normal');
  });

  it('ends the hold when the VMs are back, and a later hold starts afresh', () => {
    const held = nextRecord(
      evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 10 }]),
      {},
      NOW,
    );
    const back = evaluate([{ namespace: NS, zone: 'a', connected: 10, away: 0 }], {
      previous: held,
      now: NOW + MINUTE,
    });
    expect(back.mode).toBe('normal');
    const again = evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 10 }], {
      previous: nextRecord(back, {}, NOW + MINUTE),
      now: NOW + 2 * MINUTE,
    });
    expect(again).toMatchObject({ mode: 'held', holdSince: NOW + 2 * MINUTE });
  });

  it("releases on the operator's word until the disruption ends", () => {
    const zones = [{ namespace: NS, zone: 'a', connected: 0, away: 10 }];
    const held = nextRecord(evaluate(zones), {}, NOW);
    const released = evaluate(zones, {
      previous: { ...held, releasedAt: NOW + 1 },
      now: NOW + MINUTE,
    });
    expect(released).toMatchObject({ mode: 'released', releasedAt: NOW + 1 });
    expect(pacingOf(released, NS, 'a', NOW)).toBe('normal');

    const over = evaluate([{ namespace: NS, zone: 'a', connected: 10, away: 0 }], {
      previous: nextRecord(released, {}, NOW + MINUTE),
      now: NOW + 2 * MINUTE,
    });
    expect(over.mode).toBe('normal');
    expect(nextRecord(over, {}, NOW + 2 * MINUTE).releasedAt).toBeUndefined();
  });

  it('keeps a disrupted zone slowed while any of its entries is away, though deletions thin it', () => {
    const first = evaluate([
      { namespace: NS, zone: 'a', connected: 8, away: 12 },
      { namespace: NS, zone: 'b', connected: 9, away: 0 },
    ]);
    const thinned = evaluate(
      [
        { namespace: NS, zone: 'a', connected: 8, away: 6 },
        { namespace: NS, zone: 'b', connected: 9, away: 0 },
      ],
      {
        previous: nextRecord(first, {}, NOW),
      },
    );
    expect(pacingOf(thinned, NS, 'a', NOW)).toBe('slowed');
    const over = evaluate([{ namespace: NS, zone: 'a', connected: 8, away: 0 }], {
      previous: nextRecord(thinned, {}, NOW),
    });
    expect(over.zones[0]?.disrupted).toBe(false);
  });

  it('keeps an expired hold at normal pacing until nothing is away, and ends a hold once most VMs are back', () => {
    const zones = [{ namespace: NS, zone: 'a', connected: 0, away: 10 }];
    const expired = nextRecord(
      evaluate(zones, { now: NOW + 61 * MINUTE, previous: nextRecord(evaluate(zones), {}, NOW) }),
      {},
      NOW,
    );
    expect(expired.mode).toBe('hold-expired');
    const thinned = evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 3 }], {
      previous: expired,
    });
    expect(thinned.mode).toBe('hold-expired');
    expect(pacingOf(thinned, NS, 'a', NOW)).toBe('normal');

    const held = nextRecord(
      evaluate([{ namespace: NS, zone: 'a', connected: 0, away: 10 }]),
      {},
      NOW,
    );
    const mostlyBack = evaluate([{ namespace: NS, zone: 'a', connected: 9, away: 1 }], {
      previous: held,
    });
    expect(mostlyBack.mode).toBe('normal');
    // The last one left waits at the zone's slowed pace.
    expect(pacingOf(mostlyBack, NS, 'a', NOW)).toBe('slowed');
  });

  it('reads counters that drifted below zero as zero', () => {
    const state = evaluate([{ namespace: NS, zone: 'a', connected: -2, away: 3 }]);
    expect(state.zones[0]).toMatchObject({ connected: 0, away: 3, share: 1 });
  });
});

describe('refillCredit', () => {
  const slowed = evaluate([
    { namespace: NS, zone: 'a', connected: 40, away: 60 },
    { namespace: NS, zone: 'b', connected: 100, away: 0 },
  ]);

  it('earns the secondary rate from run to run, capped at one interval', () => {
    const first = refillCredit(slowed, undefined, NOW, { ...policy, sweepIntervalMs: MINUTE });
    // A zone that just became disrupted starts at one deletion, plus one interval's 6.
    expect(first).toEqual({ [A]: 6 });
    const record = nextRecord(slowed, { [A]: 0.5 }, NOW);
    expect(
      refillCredit(slowed, record, NOW + 30_000, { ...policy, sweepIntervalMs: MINUTE }),
    ).toEqual({ [A]: 3.5 });
    expect(
      refillCredit(slowed, record, NOW + 30 * MINUTE, { ...policy, sweepIntervalMs: MINUTE }),
    ).toEqual({ [A]: 6 });
  });
});

describe('refillCredit in a small cell', () => {
  it('lets a slowed 3-VM cell delete one entry a run, whatever the rate earned', () => {
    const small = evaluate([
      { namespace: NS, zone: 'a', connected: 0, away: 3 },
      { namespace: NS, zone: 'b', connected: 10, away: 0 },
    ]);
    expect(pacingOf(small, NS, 'a', NOW)).toBe('slowed');
    const record = nextRecord(small, { [A]: 0 }, NOW);
    // 30 minutes at 0.1/s would be 180; a minute's worth 6; 10% of 3 VMs, at least one: 1.
    expect(
      refillCredit(small, record, NOW + 30 * MINUTE, { ...policy, sweepIntervalMs: MINUTE }),
    ).toEqual({ [A]: 1 });
  });
});

describe('fail static per tenant', () => {
  const cell = (namespace: string, zone: string, connected: number, away: number) => ({
    namespace,
    zone,
    connected,
    away,
  });

  it("never slows a namespace's deletions for another namespace's departures in its zone", () => {
    // evil drops 30 fakes claiming zone a; shop has 10 VMs there, one of them crashed.
    const state = evaluate([cell('evil', 'a', 0, 30), cell('shop', 'a', 9, 1)]);
    expect(state.mode).toBe('normal');
    expect(pacingOf(state, 'evil', 'a', NOW)).toBe('slowed');
    expect(pacingOf(state, 'shop', 'a', NOW)).toBe('normal');
  });

  it('does not hold anyone when one namespace is disrupted in every zone', () => {
    const state = evaluate([
      cell('evil', 'a', 0, 30),
      cell('evil', 'b', 0, 30),
      cell('evil', 'c', 0, 30),
      cell('shop', 'a', 9, 1),
    ]);
    expect(state.mode).toBe('normal');
    expect(pacingOf(state, 'shop', 'a', NOW)).toBe('normal');
    expect(pacingOf(state, 'evil', 'b', NOW)).toBe('slowed');
  });

  it('holds every namespace when every namespace is disrupted in every zone (an outage)', () => {
    const state = evaluate([
      cell('evil', 'a', 0, 30),
      cell('shop', 'a', 1, 9),
      cell('shop', 'b', 0, 4),
    ]);
    expect(state).toMatchObject({ mode: 'held', reason: 'all-zones-disrupted' });
    expect(state.heldNamespaces).toBeUndefined();
    expect(pacingOf(state, 'shop', 'b', NOW)).toBe('held');
    expect(pacingOf(state, 'evil', 'a', NOW)).toBe('held');
  });

  it("reads a quiet window by each namespace's own size: 1,000 idle fakes do not hold a small namespace", () => {
    const quiet = { newestConnectAt: NOW - 10 * MINUTE, policy, now: NOW, previous: undefined };
    const state = evaluateDisruption({
      ...quiet,
      zones: [cell('evil', 'a', 1000, 0), cell('shop', 'a', 3, 3)],
      maxConnectionAgeMs: 120 * MINUTE,
    });
    expect(state.mode).toBe('normal');
    // A namespace large enough to have rotated in the window is held, and only it.
    const large = evaluateDisruption({
      ...quiet,
      zones: [cell('big', 'a', 197, 3), cell('shop', 'a', 3, 1)],
      maxConnectionAgeMs: 120 * MINUTE,
    });
    expect(large).toMatchObject({ mode: 'held', reason: 'no-connects', heldNamespaces: ['big'] });
    expect(pacingOf(large, 'big', 'a', NOW)).toBe('held');
    expect(pacingOf(large, 'shop', 'a', NOW)).toBe('normal');
  });

  it('bounds every slowdown: a cell kept disrupted returns to the normal pace after the bound', () => {
    const first = evaluate([cell('evil', 'a', 0, 30), cell('shop', 'a', 10, 0)]);
    expect(first.zones[0]).toMatchObject({ slowedSince: NOW, slowedUntil: NOW + 60 * MINUTE });
    // More fakes dripped in keep the cell disrupted, but not its slowdown past the bound.
    const later = evaluate([cell('evil', 'a', 0, 50), cell('shop', 'a', 10, 0)], {
      previous: nextRecord(first, {}, NOW),
      now: NOW + 60 * MINUTE,
      newestConnectAt: NOW + 60 * MINUTE - 1000,
    });
    expect(later.zones[0]).toMatchObject({ disrupted: true, slowedSince: NOW });
    expect(pacingOf(later, 'evil', 'a', NOW + 59 * MINUTE)).toBe('slowed');
    expect(pacingOf(later, 'evil', 'a', NOW + 60 * MINUTE)).toBe('normal');
  });

  it('keeps one peak per steady cell in the record, whatever the number of runs', () => {
    let previous: DisruptionRecord | undefined;
    for (let run = 0; run < 20; run++) {
      const state = evaluate([cell('shop', 'a', 10, 0)], { previous, now: NOW + run * MINUTE });
      previous = nextRecord(state, {}, NOW + run * MINUTE);
    }
    expect(previous?.peaks?.[cellKey('shop', 'a')]).toEqual([[NOW + 19 * MINUTE, 10]]);
  });
});
