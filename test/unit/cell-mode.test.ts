import { describe, expect, it } from 'vitest';
import { cellMode, fleetMode, type ModeFacts } from '../../lib/domain/cell-mode.ts';
import {
  type DisruptionPolicy,
  type DisruptionRecord,
  evaluateDisruption,
  modesOf,
  nextRecord,
  pacingOf,
  type ZoneCount,
} from '../../lib/domain/disruption.ts';
import { failStaticStatus } from '../../lib/domain/fail-static-status.ts';

const MINUTE = 60_000;
const NOW = Date.UTC(2026, 2, 1, 12);
const policy: DisruptionPolicy = {
  threshold: 0.55,
  windowMs: 5 * MINUTE,
  secondaryDeletesPerSecond: 0.1,
  holdBoundMs: 60 * MINUTE,
};

function facts(overrides: Partial<ModeFacts> = {}): ModeFacts {
  return { mode: 'normal', disrupted: new Map(), ...overrides };
}

describe('cellMode', () => {
  it('says slowed for a disrupted cell until its bound, then normal with why', () => {
    const slowed = facts({ disrupted: new Map([['pay#z', NOW + MINUTE]]) });
    expect(cellMode(slowed, 'pay', 'pay#z', NOW)).toEqual({ mode: 'slowed', until: NOW + MINUTE });
    expect(cellMode(slowed, 'pay', 'pay#z', NOW + MINUTE)).toEqual({
      mode: 'normal',
      until: NOW + MINUTE,
      note: 'slowdown bound passed',
    });
    expect(cellMode(slowed, 'shop', 'shop#z', NOW)).toEqual({ mode: 'normal' });
  });

  it('says held only in the held namespaces, and slowed in a disrupted cell of another', () => {
    const held = facts({
      mode: 'held',
      heldNamespaces: ['big'],
      holdUntil: NOW + MINUTE,
      disrupted: new Map([['evil#z', undefined]]),
    });
    expect(cellMode(held, 'big', 'big#z', NOW)).toEqual({ mode: 'held', until: NOW + MINUTE });
    expect(cellMode(held, 'evil', 'evil#z', NOW).mode).toBe('slowed');
  });
});

describe('fleetMode', () => {
  it("is the cells' most severe word, never normal beside a slowed cell", () => {
    expect(fleetMode({ mode: 'normal' }, ['normal', 'slowed'])).toBe('slowed');
    expect(fleetMode({ mode: 'normal' }, ['normal'])).toBe('normal');
    expect(fleetMode({ mode: 'held' }, ['normal'])).toBe('held');
    expect(fleetMode({ mode: 'hold-expired' }, ['normal'])).toBe('hold-expired');
  });
});

describe('one word everywhere', () => {
  // Runs that slow a cell, hold a fleet, and let a hold expire: what the sweep paces by and
  // what `sweep status` / the dashboard read back from the saved record must be one word.
  const stories: { name: string; zones: ZoneCount[]; previous?: DisruptionRecord; at: number }[] = [
    {
      name: 'one cell slowed (issue 35: the console said normal)',
      zones: [
        { namespace: 'pay', zone: 'us-east-1/us-east-1a', connected: 0, away: 3 },
        { namespace: 'pay', zone: 'us-east-1/us-east-1b', connected: 5, away: 0 },
      ],
      at: NOW,
    },
    {
      name: 'every cell disrupted: held',
      zones: [
        { namespace: 'a', zone: 'z1', connected: 0, away: 5 },
        { namespace: 'b', zone: 'z2', connected: 1, away: 5 },
      ],
      at: NOW,
    },
  ];
  for (const story of stories) {
    it(`agrees between the run and the status for ${story.name}`, () => {
      const state = evaluateDisruption({
        now: story.at,
        zones: story.zones,
        newestConnectAt: story.at - 1000,
        previous: story.previous,
        policy,
      });
      const record = { ...nextRecord(state, {}, story.at), policy };
      const status = failStaticStatus(record, story.zones, story.at);
      const { cells, fleet } = modesOf(state, story.at);
      for (const cell of status.cells) {
        const paced = pacingOf(state, cell.namespace, cell.zone, story.at);
        expect(cell.state).toBe(paced);
        expect(cells.get(`${cell.namespace}#${cell.zone}`)?.mode).toBe(paced);
      }
      expect(status.mode).toBe(fleet);
      expect(status.mode).not.toBe('normal');
    });
  }
});

describe('sweep status of a hold', () => {
  it('lists a held namespace’s cell with nothing away as normal: it holds nothing there', () => {
    const zones: ZoneCount[] = [
      { namespace: 'a', zone: 'z1', connected: 0, away: 5 },
      { namespace: 'b', zone: 'z2', connected: 0, away: 4 },
    ];
    const state = evaluateDisruption({
      now: NOW,
      zones,
      newestConnectAt: NOW - 1000,
      previous: undefined,
      policy,
    });
    expect(state.mode).toBe('held');
    const record = { ...nextRecord(state, {}, NOW), policy };
    // Later: namespace b's VMs are back, and an empty namespace c has a cell.
    const now: ZoneCount[] = [
      { namespace: 'a', zone: 'z1', connected: 0, away: 5 },
      { namespace: 'b', zone: 'z2', connected: 4, away: 0 },
      { namespace: 'c', zone: 'z3', connected: 0, away: 0 },
    ];
    const status = failStaticStatus(record, now, NOW + 1000);
    expect(status.mode).toBe('held');
    expect(status.cells.map((cell) => [cell.namespace, cell.state])).toEqual([
      ['a', 'held'],
      ['b', 'normal'],
      ['c', 'normal'],
    ]);
  });
});
