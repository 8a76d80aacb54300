import { describe, expect, it } from 'vitest';
import type { DisruptionRecord } from '../../lib/domain/disruption.ts';
import {
  deletedEvent,
  EVENT_MESSAGE_MAX,
  EVENT_RETENTION_MS,
  entryEvent,
  healthEvent,
  reasonInfo,
} from '../../lib/domain/entry-events.ts';
import { deletionHeldEvent, entryHistory } from '../../lib/domain/entry-history.ts';
import {
  type EntryRecord,
  effectiveHealth,
  renderWorkloadEntry,
} from '../../lib/domain/entry-record.ts';
import { ISTIO_API_VERSION } from '../../lib/domain/model.ts';
import { servingState } from '../../lib/projection/serving.ts';

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const MINUTE = 60_000;

function record(overrides: Partial<EntryRecord> = {}): EntryRecord {
  return {
    entry: {
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadEntry',
      metadata: {
        name: 'web-10.0.0.1',
        namespace: 'shop',
        creationTimestamp: new Date(T0).toISOString(),
      },
      spec: { address: '10.0.0.1', locality: 'eu-west-1/eu-west-1a' },
    },
    autoRegistrationGroup: 'web',
    revision: 3,
    connection: {
      controller: 'workload-registrar',
      connectedAt: T0,
      connectionIds: ['c1'],
      holderSince: { c1: T0 },
    },
    ...overrides,
  };
}

describe('entry history', () => {
  it('derives every event of an entry a release without history wrote, oldest first', () => {
    const old = record({
      connection: {
        controller: 'workload-registrar',
        disconnectedAt: T0 + 10 * MINUTE,
        departure: 'abnormal',
        connectionIds: [],
      },
      health: {
        status: 'False',
        message: 'GET /ready: 503',
        lastProbeTime: T0 + 5 * MINUTE,
        lastTransitionTime: T0 + 5 * MINUTE,
      },
    });
    expect(
      entryHistory(old, T0 + 20 * MINUTE).map((e) => [e.reason, e.at, e.type, e.from]),
    ).toEqual([
      ['Registered', T0, 'Normal', 'connect'],
      ['Unhealthy', T0 + 5 * MINUTE, 'Warning', 'agent'],
      ['Disconnected', T0 + 10 * MINUTE, 'Warning', 'disconnect'],
    ]);
  });

  it('once events are recorded, keeps only what the state says of the time before, so nothing shows twice', () => {
    const since = T0 + 8 * MINUTE;
    const mixed = record({
      // Derived from the state: a health transition before the upgrade, and a holder after it.
      health: {
        status: 'True',
        lastProbeTime: T0 + 9 * MINUTE,
        lastTransitionTime: T0 + 2 * MINUTE,
      },
      connection: {
        controller: 'workload-registrar',
        connectedAt: T0 + 9 * MINUTE,
        connectionIds: ['c2'],
        holderSince: { c2: T0 + 9 * MINUTE },
      },
      eventsSince: since,
      events: [
        entryEvent('Reconnected', T0 + 9 * MINUTE, 'connection c2 connected: back in the mesh'),
      ],
    });
    expect(entryHistory(mixed, T0 + 10 * MINUTE).map((e) => e.reason)).toEqual([
      'Registered',
      'Healthy',
      'Reconnected',
    ]);
  });

  it('shows the latest refused claim of the address from its own slot, once, beside the stored events', () => {
    const noted = T0 + 9 * MINUTE;
    const held = record({
      eventsSince: T0,
      events: [
        entryEvent('Disconnected', T0 + MINUTE, 'the last connection closed'),
        entryEvent('Reconnected', T0 + 2 * MINUTE, 'connection c1 connected'),
        // A copy an older release appended to the list, of the same claim.
        entryEvent('AddressInUse', noted, 'a connect that would register evil/web claimed it'),
      ],
      addressConflict: { at: noted, claimant: 'evil/web-10.0.0.1' },
    });
    expect(entryHistory(held, T0 + 10 * MINUTE).map((e) => e.reason)).toEqual([
      'Registered',
      'Disconnected',
      'Reconnected',
      'AddressInUse',
    ]);
    const slotOnly = record({ eventsSince: T0, events: [], addressConflict: held.addressConflict });
    expect(entryHistory(slotOnly, T0 + 10 * MINUTE).map((e) => e.reason)).toEqual([
      'Registered',
      'AddressInUse',
    ]);
  });

  it('shows no event older than the retention, and keeps the creation while it is young', () => {
    const now = T0 + EVENT_RETENTION_MS + MINUTE;
    const aged = record({
      eventsSince: T0,
      events: [healthEvent(T0 + 30_000, true), healthEvent(now - MINUTE, false, 'timeout')],
    });
    expect(entryHistory(aged, now).map((e) => e.reason)).toEqual(['Unhealthy']);
    expect(entryHistory(aged, T0 + MINUTE).map((e) => e.reason)).toEqual([
      'Registered',
      'Healthy',
      'Unhealthy',
    ]);
  });

  it('cuts a long message so that the list stays small, and reads reasons of a newer release', () => {
    const long = healthEvent(T0, false, 'x'.repeat(1024));
    expect(long.message).toHaveLength(EVENT_MESSAGE_MAX);
    expect(long.message.endsWith('…')).toBe(true);
    expect(reasonInfo('SomethingNew')).toEqual({ from: 'registrar', type: 'Normal' });
  });

  it('says why an entry was deleted, with how fail static paced it', () => {
    expect(
      deletedEvent(
        T0,
        { kind: 'swept', departure: 'abnormal' },
        'fail static slowed it: its zone was disrupted',
      ),
    ).toMatchObject({
      reason: 'Swept',
      type: 'Warning',
      from: 'sweeper',
      message:
        'deleted by the sweeper: disconnected (abnormally) for the whole grace period; fail static slowed it: its zone was disrupted',
    });
    expect(
      deletedEvent(T0, { kind: 'instance-gone', instanceId: 'i-0123456789abcdef0' }),
    ).toMatchObject({
      reason: 'InstanceGone',
      from: 'ec2',
    });
    expect(deletedEvent(T0, { kind: 'operator', cascade: 'web' }).message).toBe(
      "deleted by registrar delete wg web (the group's entries go with it)",
    );
  });
});

describe('fail static, as an event derived now', () => {
  const departed = record({
    connection: { controller: 'r', disconnectedAt: T0, departure: 'abnormal', connectionIds: [] },
  });
  const disruption = (overrides: Partial<DisruptionRecord>): DisruptionRecord => ({
    mode: 'normal',
    since: T0,
    credit: {},
    evaluatedAt: T0,
    disruptedZones: [],
    away: 1,
    ...overrides,
  });
  const GRACE = 5 * MINUTE;

  it('is there while every namespace is held and the entry is due', () => {
    const held = deletionHeldEvent(
      departed,
      disruption({ mode: 'held', holdSince: T0 + MINUTE }),
      GRACE,
      T0 + 10 * MINUTE,
    );
    expect(held).toMatchObject({ reason: 'DeletionHeld', type: 'Warning', at: T0 + GRACE });
    expect(held?.message).toContain('every namespace is held');
  });

  it('is there while the entry’s zone of its namespace is slowed', () => {
    const slowed = deletionHeldEvent(
      departed,
      disruption({
        disruptedZones: ['shop#eu-west-1/eu-west-1a'],
        slowedSince: { 'shop#eu-west-1/eu-west-1a': T0 + 8 * MINUTE },
      }),
      GRACE,
      T0 + 10 * MINUTE,
    );
    expect(slowed).toMatchObject({ reason: 'DeletionHeld', at: T0 + 8 * MINUTE });
  });

  it('is not there for a clean departure, an entry not due yet, another namespace’s hold, or no record', () => {
    const clean = record({
      connection: { controller: 'r', disconnectedAt: T0, departure: 'clean', connectionIds: [] },
    });
    const held = disruption({ mode: 'held', heldNamespaces: ['other'] });
    expect(
      deletionHeldEvent(clean, disruption({ mode: 'held' }), GRACE, T0 + 10 * MINUTE),
    ).toBeUndefined();
    expect(
      deletionHeldEvent(departed, disruption({ mode: 'held' }), GRACE, T0 + MINUTE),
    ).toBeUndefined();
    expect(deletionHeldEvent(departed, held, GRACE, T0 + 10 * MINUTE)).toBeUndefined();
    expect(deletionHeldEvent(departed, undefined, GRACE, T0 + 10 * MINUTE)).toBeUndefined();
  });
});

describe('cordon: the Healthy condition the mesh sees', () => {
  const healthy = {
    status: 'True' as const,
    lastProbeTime: T0 + 3 * MINUTE,
    lastTransitionTime: T0 + MINUTE,
  };

  it('is False, reason Maintenance, with the operator’s message, whatever the agent reports', () => {
    const cordoned = record({
      health: healthy,
      cordon: { at: T0 + 2 * MINUTE, message: 'INC-7: bad disk' },
    });
    expect(renderWorkloadEntry(cordoned).status?.conditions).toEqual([
      {
        type: 'Healthy',
        status: 'False',
        reason: 'Maintenance',
        message: 'INC-7: bad disk',
        lastProbeTime: new Date(T0 + 3 * MINUTE).toISOString(),
        lastTransitionTime: new Date(T0 + 2 * MINUTE).toISOString(),
      },
    ]);
    expect(servingState(cordoned)).toEqual({
      ready: false,
      reason: 'Maintenance',
      message: 'INC-7: bad disk',
      since: T0 + 2 * MINUTE,
    });
  });

  it('keeps the time an unhealthy entry turned False, and shows a condition even before any report', () => {
    const down = { status: 'False' as const, lastProbeTime: T0 + MINUTE, lastTransitionTime: T0 };
    expect(
      effectiveHealth(record({ health: down, cordon: { at: T0 + 2 * MINUTE, message: 'm' } }))
        ?.lastTransitionTime,
    ).toBe(T0);
    expect(
      effectiveHealth(record({ cordon: { at: T0 + 2 * MINUTE, message: 'm' } })),
    ).toMatchObject({
      status: 'False',
      reason: 'Maintenance',
      lastProbeTime: T0 + 2 * MINUTE,
    });
  });

  it('follows the probe again after uncordon, True from the uncordon on', () => {
    const back = record({ health: healthy, uncordonedAt: T0 + 10 * MINUTE });
    expect(effectiveHealth(back)).toMatchObject({
      status: 'True',
      lastTransitionTime: T0 + 10 * MINUTE,
    });
    expect(servingState(back)).toMatchObject({
      ready: true,
      reason: 'Healthy',
      since: T0 + 10 * MINUTE,
    });
    // A probe that turned True after the uncordon keeps its own time.
    const later = record({
      health: { ...healthy, lastTransitionTime: T0 + 11 * MINUTE },
      uncordonedAt: T0 + 10 * MINUTE,
    });
    expect(effectiveHealth(later)?.lastTransitionTime).toBe(T0 + 11 * MINUTE);
  });

  it('takes a hand-made entry out of traffic too', () => {
    const handMade = record({
      autoRegistrationGroup: undefined,
      connection: undefined,
      cordon: { at: T0, message: 'm' },
    });
    delete handMade.autoRegistrationGroup;
    expect(servingState(handMade)).toMatchObject({ ready: false, reason: 'Maintenance' });
    expect(servingState({ ...handMade, cordon: undefined })).toMatchObject({
      ready: true,
      reason: 'Static',
    });
  });
});
