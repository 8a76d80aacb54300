import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DISCONNECTED_REASON,
  type EntryRecord,
  renderWorkloadEntry,
} from '../../lib/domain/entry-record.ts';
import { servingState } from '../../lib/projection/serving.ts';
import { istiodRoutesTo } from '../fixtures/istio-routing-rule.ts';
import { entryRecord, T0 } from '../fixtures/projection-records.ts';

const MINUTE = 60_000;
const at = fc.integer({ min: 0, max: 60 }).map((m) => T0 + m * MINUTE);
const health = fc.option(
  fc.record({ status: fc.constantFrom('True' as const, 'False' as const), at }),
  { nil: undefined },
);

/** Every shape an entry takes: auto-registered or hand-made, held or not, probed or not,
 * healthy, unhealthy or unreported, cordoned or put back, with stored conditions or without. */
const anyRecord: fc.Arbitrary<EntryRecord> = fc
  .record({
    handMade: fc.boolean(),
    connected: fc.boolean(),
    connectedAt: at,
    disconnectedAt: fc.option(at, { nil: undefined }),
    health,
    healthChecksEnabled: fc.boolean(),
    cordon: fc.option(at, { nil: undefined }),
    uncordonedAt: fc.option(at, { nil: undefined }),
    stored: fc.option(fc.constantFrom('True' as const, 'False' as const), { nil: undefined }),
    annotated: fc.option(fc.constantFrom('true', 'false', 'yes', 'T'), { nil: undefined }),
  })
  .map((shape) => {
    const record = entryRecord('vm-a', {
      connectedAt: shape.connectedAt,
      disconnectedAt: shape.connected ? undefined : (shape.disconnectedAt ?? shape.connectedAt),
      health: shape.health,
      healthChecksEnabled: shape.healthChecksEnabled,
    });
    if (!shape.connected && shape.disconnectedAt === undefined && record.connection) {
      // An entry written before disconnectedAt existed: not connected, and no time recorded.
      record.connection = { ...record.connection, disconnectedAt: undefined };
    }
    if (shape.cordon !== undefined) record.cordon = { at: shape.cordon, message: 'patching' };
    if (shape.uncordonedAt !== undefined) record.uncordonedAt = shape.uncordonedAt;
    if (shape.handMade) {
      // Only a hand-made entry stores its own Healthy condition: an auto-registered entry's is
      // rendered from the record's health (EntryRecord.entry is stored without it).
      if (shape.stored !== undefined) {
        record.entry.status = {
          conditions: [{ type: 'Healthy', status: shape.stored, lastTransitionTime: '' }],
        };
      }
      delete record.autoRegistrationGroup;
      delete record.connection;
      delete record.healthChecksEnabled;
      if (shape.annotated !== undefined) {
        record.entry.metadata.annotations = {
          'proxy.istio.io/health-checks-enabled': shape.annotated,
        };
      }
    }
    return record;
  });

describe('routable follows reality, with istiod as the judge', () => {
  it('istiod routes to the rendered entry exactly when the registrar calls it routable', () => {
    fc.assert(
      fc.property(anyRecord, (record) => {
        expect(istiodRoutesTo(renderWorkloadEntry(record))).toBe(servingState(record).ready);
      }),
      { numRuns: 2000 },
    );
  });

  it('never routes to an auto-registered entry that no connection holds', () => {
    fc.assert(
      fc.property(anyRecord, (record) => {
        if (record.autoRegistrationGroup === undefined) return;
        if (record.connection?.connectedAt !== undefined) return;
        expect(istiodRoutesTo(renderWorkloadEntry(record))).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('a crashed VM of a group without a probe is out of traffic at its disconnect', () => {
    const crashed = entryRecord('vm-a', {
      disconnectedAt: T0 + MINUTE,
      healthChecksEnabled: false,
    });
    const rendered = renderWorkloadEntry(crashed);
    expect(rendered.metadata.annotations?.['proxy.istio.io/health-checks-enabled']).toBe('true');
    expect(rendered.status?.conditions).toEqual([
      {
        type: 'Healthy',
        status: 'False',
        reason: DISCONNECTED_REASON,
        message: `no connection holds this entry since ${new Date(T0 + MINUTE).toISOString()}; kept for the grace period, routable again when its VM reconnects`,
        lastProbeTime: new Date(T0 + MINUTE).toISOString(),
        lastTransitionTime: new Date(T0 + MINUTE).toISOString(),
      },
    ]);
    expect(istiodRoutesTo(rendered)).toBe(false);
  });

  it('a healthy probed VM that crashes turns Healthy False at its disconnect, not at the sweep', () => {
    const healthy = entryRecord('vm-a', { health: { status: 'True', at: T0 } });
    expect(istiodRoutesTo(renderWorkloadEntry(healthy))).toBe(true);
    const crashed = entryRecord('vm-a', {
      health: { status: 'True', at: T0 },
      disconnectedAt: T0 + 2 * MINUTE,
    });
    const condition = renderWorkloadEntry(crashed).status?.conditions?.[0];
    expect(condition).toMatchObject({ status: 'False', reason: 'Disconnected' });
    expect(condition?.lastTransitionTime).toBe(new Date(T0 + 2 * MINUTE).toISOString());
  });

  it('keeps the probe failure as the transition time when the VM was already unhealthy', () => {
    const crashed = entryRecord('vm-a', {
      health: { status: 'False', at: T0 },
      disconnectedAt: T0 + 2 * MINUTE,
    });
    const condition = renderWorkloadEntry(crashed).status?.conditions?.[0];
    expect(condition?.lastTransitionTime).toBe(new Date(T0).toISOString());
  });

  it('a connected VM of a group without a probe is routable and carries no health annotation', () => {
    const live = entryRecord('vm-a', { healthChecksEnabled: false });
    const rendered = renderWorkloadEntry(live);
    expect(rendered.metadata.annotations).not.toHaveProperty(
      'proxy.istio.io/health-checks-enabled',
    );
    expect(rendered.status).toBeUndefined();
    expect(istiodRoutesTo(rendered)).toBe(true);
  });

  it('a cordoned VM of a group without a probe is out of traffic in istiod too', () => {
    const cordoned = entryRecord('vm-a', { healthChecksEnabled: false });
    cordoned.cordon = { at: T0 + MINUTE, message: 'kernel patch' };
    expect(istiodRoutesTo(renderWorkloadEntry(cordoned))).toBe(false);
  });

  it('a make-before-break rotation renders the same routable entry while both connections hold it', () => {
    const rotating = entryRecord('vm-a', { health: { status: 'True', at: T0 } });
    if (rotating.connection) {
      rotating.connection.connectionIds = ['conn-1', 'conn-2'];
      rotating.connection.connectedAt = T0 + 110 * MINUTE;
    }
    expect(istiodRoutesTo(renderWorkloadEntry(rotating))).toBe(true);
  });
});
