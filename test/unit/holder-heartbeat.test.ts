import { describe, expect, it } from 'vitest';
import { DEFAULT_HEARTBEAT } from '../../lib/domain/heartbeat.ts';
import {
  heartbeatInBounds,
  heldHeartbeat,
  heldSince,
  needsNotice,
  toldAtConnect,
} from '../../lib/domain/holder-heartbeat.ts';

const T0 = Date.UTC(2026, 10, 28, 12);
const FIVE_BY_TWO = { intervalMs: 5_000, misses: 2 };
const TEN_BY_THREE = { intervalMs: 10_000, misses: 3 };

describe('what a connect tells its holder', () => {
  it("is the group's heartbeat for an agent of 0.2 or newer, with notices from 0.3", () => {
    expect(toldAtConnect(FIVE_BY_TWO, '0.2.0', T0)).toEqual({
      told: FIVE_BY_TWO,
      follows: true,
      notices: false,
      at: T0,
    });
    expect(toldAtConnect(FIVE_BY_TWO, '0.3.0-dev', T0)).toMatchObject({
      follows: true,
      notices: true,
    });
    expect(toldAtConnect(FIVE_BY_TWO, '1.0.0', T0)).toMatchObject({ follows: true, notices: true });
  });

  it('is the default for a connection that names no version, an older one, or one that is not a version', () => {
    for (const version of [undefined, '0.1.x', '0.1.9', 'latest', '']) {
      expect(toldAtConnect(FIVE_BY_TWO, version, T0)).toEqual({
        told: DEFAULT_HEARTBEAT,
        follows: false,
        notices: false,
        at: T0,
      });
    }
  });
});

describe('the heartbeat a holder is held to', () => {
  const group = { heartbeat: FIVE_BY_TWO, since: T0 + 60_000 };
  const beat = { told: TEN_BY_THREE, follows: true, notices: true, at: T0 };

  it('is exactly what it was told, whatever the group says now', () => {
    expect(heldHeartbeat(group, { since: T0, agentVersion: '0.3.0', beat })).toEqual(TEN_BY_THREE);
    expect(heldHeartbeat(undefined, { since: T0, beat })).toEqual(TEN_BY_THREE);
  });

  it("follows 0.2's rule for a holder with no record (let in by a registrar before 0.3)", () => {
    expect(heldHeartbeat(group, { since: T0, agentVersion: '0.2.0' })).toEqual(DEFAULT_HEARTBEAT);
    expect(heldHeartbeat(group, { since: T0 + 60_000, agentVersion: '0.2.0' })).toEqual(
      FIVE_BY_TWO,
    );
  });

  it('counts silence from no earlier than the time it was held to it (an acknowledgement)', () => {
    expect(heldSince({ since: T0, beat: { ...beat, at: T0 + 30_000 } })).toBe(T0 + 30_000);
    expect(heldSince({ since: T0 + 40_000, beat: { ...beat, at: T0 + 30_000 } })).toBe(T0 + 40_000);
    expect(heldSince({ since: T0 })).toBe(T0);
  });
});

describe('a notice of a changed heartbeat', () => {
  const beat = { told: TEN_BY_THREE, follows: true, notices: true, at: T0 };

  it('goes to a holder that takes notices and was told something else', () => {
    expect(needsNotice(beat, FIVE_BY_TWO)).toBe(true);
    expect(needsNotice(beat, TEN_BY_THREE)).toBe(false);
  });

  it('never goes to an agent that cannot take it, or to a holder with no record', () => {
    expect(needsNotice({ ...beat, notices: false }, FIVE_BY_TWO)).toBe(false);
    expect(needsNotice({ ...beat, follows: false }, FIVE_BY_TWO)).toBe(false);
    expect(needsNotice(undefined, FIVE_BY_TWO)).toBe(false);
  });

  it('is acknowledged only with a heartbeat apply would take', () => {
    expect(heartbeatInBounds(5_000, 2)).toEqual(FIVE_BY_TWO);
    expect(heartbeatInBounds(4_000, 2)).toBeUndefined();
    expect(heartbeatInBounds(5_000, 1)).toBeUndefined();
    expect(heartbeatInBounds(5_000.5, 2)).toBeUndefined();
    expect(heartbeatInBounds(600_000, 2)).toBeUndefined();
  });
});
