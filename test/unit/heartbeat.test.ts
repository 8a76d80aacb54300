import { describe, expect, it } from 'vitest';
import {
  DEFAULT_HEARTBEAT,
  HEARTBEAT_ANNOTATIONS,
  holderHeartbeat,
  isSilent,
  parseHeartbeat,
} from '../../lib/domain/heartbeat.ts';
import { parseIstioDocuments } from '../../lib/protocol/istio-documents.ts';
import { passPeriodMs } from '../../lib/registration/sweep-heartbeat.ts';
import { CATALOG_ITEM_LIMITS } from '../../lib/store/catalog-item-limits.ts';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const TEN_BY_THREE = { intervalMs: 10_000, misses: 3 };

describe('when a connection is silent', () => {
  it('is silent once nothing was heard for longer than interval x misses (+1 s of clock slack)', () => {
    const activity = { connectedAt: T0, lastActiveAt: T0 + 5_000 };
    expect(isSilent(activity, T0, T0 + 5_000 + 31_000, TEN_BY_THREE)).toBe(false);
    expect(isSilent(activity, T0, T0 + 5_000 + 31_001, TEN_BY_THREE)).toBe(true);
  });

  it("judges by API Gateway's clock when the answer carries it, not the caller's", () => {
    const activity = { lastActiveAt: T0, answeredAt: T0 + 20_000 };
    // The sweeper's clock runs 60 s ahead: by its own clock the connection looks silent.
    expect(isSilent(activity, undefined, T0 + 80_000, TEN_BY_THREE)).toBe(false);
    expect(isSilent({ ...activity, answeredAt: T0 + 40_000 }, undefined, T0, TEN_BY_THREE)).toBe(
      true,
    );
  });

  it('never finds a connection that has sent nothing yet silent before the bound passed since it opened', () => {
    // A rotation's new connection: API Gateway's lastActiveAt may be its connect, or older.
    const fresh = { lastActiveAt: T0 - 600_000, connectedAt: T0 };
    expect(isSilent(fresh, T0, T0 + 30_000, TEN_BY_THREE)).toBe(false);
    // Its holder time counts too when API Gateway gives no connectedAt.
    expect(isSilent({ lastActiveAt: T0 - 600_000 }, T0, T0 + 30_000, TEN_BY_THREE)).toBe(false);
    expect(isSilent(fresh, T0, T0 + 32_000, TEN_BY_THREE)).toBe(true);
  });

  it('knows nothing without lastActiveAt, and a lastActiveAt in the future is not silence', () => {
    expect(isSilent({ connectedAt: T0 }, T0, T0 + 3_600_000, TEN_BY_THREE)).toBe(false);
    expect(isSilent({ lastActiveAt: T0 + 60_000 }, undefined, T0, TEN_BY_THREE)).toBe(false);
  });

  it('keeps the default bound (5 min x 2) for a connection pinging every 5 min', () => {
    const pinged = { lastActiveAt: T0 };
    expect(isSilent(pinged, undefined, T0 + 5 * 60_000 + 500, DEFAULT_HEARTBEAT)).toBe(false);
    expect(isSilent(pinged, undefined, T0 + 10 * 60_000 + 1_001, DEFAULT_HEARTBEAT)).toBe(true);
  });
});

describe('the heartbeat a holder is held to', () => {
  const group = { heartbeat: TEN_BY_THREE, since: T0 };

  it("is the group's for an agent that heeds it and connected once the setting applied", () => {
    expect(holderHeartbeat(group, { since: T0, agentVersion: '0.2.0' })).toEqual(TEN_BY_THREE);
    expect(holderHeartbeat(group, { since: T0 + 1, agentVersion: '0.2.0-dev' })).toEqual(
      TEN_BY_THREE,
    );
  });

  it('is the default for a holder connected before the setting applied (it was not told)', () => {
    expect(holderHeartbeat(group, { since: T0 - 1, agentVersion: '0.3.0' })).toEqual(
      DEFAULT_HEARTBEAT,
    );
  });

  it('is the default for an older agent, which keeps pinging every 5 min', () => {
    expect(holderHeartbeat(group, { since: T0 + 1, agentVersion: '0.1.x' })).toEqual(
      DEFAULT_HEARTBEAT,
    );
    expect(holderHeartbeat(group, { since: T0 + 1 })).toEqual(DEFAULT_HEARTBEAT);
    expect(holderHeartbeat(undefined, { since: T0 + 1, agentVersion: '0.2.0' })).toEqual(
      DEFAULT_HEARTBEAT,
    );
  });
});

describe('the heartbeat annotations', () => {
  it('reads an interval and a miss count, each defaulting alone', () => {
    expect(
      parseHeartbeat({
        [HEARTBEAT_ANNOTATIONS.interval]: '10s',
        [HEARTBEAT_ANNOTATIONS.misses]: '3',
      }),
    ).toEqual({ heartbeat: TEN_BY_THREE });
    expect(parseHeartbeat({ [HEARTBEAT_ANNOTATIONS.interval]: '1m' })).toEqual({
      heartbeat: { intervalMs: 60_000, misses: 2 },
    });
    expect(parseHeartbeat({})).toEqual({});
  });

  it('refuses at apply an interval or miss count out of range, naming the annotation and the value', () => {
    const group = (annotations: string) =>
      [
        'apiVersion: networking.istio.io/v1',
        'kind: WorkloadGroup',
        'metadata:',
        '  name: web',
        '  namespace: shop',
        '  annotations:',
        annotations,
        'spec:',
        '  template:',
        '    ports:',
        '      http: 8080',
      ].join('\n');
    expect(() =>
      parseIstioDocuments(group(`    ${HEARTBEAT_ANNOTATIONS.interval}: "1s"`), {
        limits: CATALOG_ITEM_LIMITS,
      }),
    ).toThrow(
      `metadata.annotations["${HEARTBEAT_ANNOTATIONS.interval}"]: must be a duration from 5s to 5m (10s, 1m), got '1s'`,
    );
    expect(() =>
      parseIstioDocuments(group(`    ${HEARTBEAT_ANNOTATIONS.misses}: "1"`), {
        limits: CATALOG_ITEM_LIMITS,
      }),
    ).toThrow(
      `metadata.annotations["${HEARTBEAT_ANNOTATIONS.misses}"]: must be a whole number from 2 to 10, got '1'`,
    );
    expect(
      parseIstioDocuments(group(`    ${HEARTBEAT_ANNOTATIONS.interval}: "15s"`), {
        limits: CATALOG_ITEM_LIMITS,
      }),
    ).toHaveLength(1);
  });
});

describe("the heartbeat lane's passes", () => {
  it('are half the shortest bound apart, at least 5 s, at most the sweep interval', () => {
    expect(passPeriodMs(30_000, 60_000)).toBe(15_000);
    expect(passPeriodMs(6_000, 60_000)).toBe(5_000);
    expect(passPeriodMs(600_000, 60_000)).toBe(60_000);
  });
});
