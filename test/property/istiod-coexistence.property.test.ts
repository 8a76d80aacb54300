import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';
import type { WorkloadEntry } from '../../lib/domain/model.ts';
import { desiredWorkloadEntries } from '../../lib/projection/desired-istio.ts';
import {
  clusterAnnotations,
  ISTIOD_CONTROLLER_KEYS,
  REGISTRAR_ANNOTATIONS,
  WORKLOAD_NAME_LABEL,
} from '../../lib/projection/istiod-coexistence.ts';
import { servingState } from '../../lib/projection/serving.ts';
import { istiodRoutesTo } from '../fixtures/istio-routing-rule.ts';
import {
  type ModelEntry,
  startIstiodControllerModel,
} from '../fixtures/istiod-controller-model.ts';
import { entryRecord, T0 } from '../fixtures/projection-records.ts';

/**
 * A projected WorkloadEntry is never in scope of istiod's cleanup (the MODEL of its controller,
 * test/fixtures/istiod-controller-model.ts), at any age of its connection or disconnect and for
 * any istiod grace and keepalive, while istiod's routing rule gives exactly the registrar's
 * answer (`servingState().ready`, what `get we` prints as ROUTABLE).
 */

const HOUR = 3_600_000;

const anyRecord: fc.Arbitrary<EntryRecord> = fc
  .record({
    connected: fc.boolean(),
    probe: fc.boolean(),
    health: fc.option(fc.constantFrom('True', 'False'), { nil: undefined }),
    cordoned: fc.boolean(),
    age: fc.integer({ min: 0, max: 48 * HOUR }),
  })
  .map(({ connected, probe, health, cordoned, age }) => {
    const at = T0 + age;
    const record = entryRecord('vm-10-0-0-1', {
      ...(connected ? { connectedAt: T0 } : { disconnectedAt: T0 }),
      healthChecksEnabled: probe,
      ...(health ? { health: { status: health, at } } : {}),
    });
    if (cordoned) record.cordon = { at, message: 'patching the kernel' };
    return record;
  });

describe('the projected WorkloadEntry beside istiod', () => {
  it('is never cleaned by istiod, and istiod routes to it exactly when the registrar says', () => {
    fc.assert(
      fc.property(
        anyRecord,
        fc.integer({ min: 0, max: 100 * 24 * HOUR }),
        fc.integer({ min: 1, max: 10 * 60_000 }),
        fc.integer({ min: 0, max: 4 * HOUR }),
        (record, later, grace, keepalive) => {
          const istiod = startIstiodControllerModel({
            url: 'http://127.0.0.1:1', // shouldCleanup reads nothing from the API
            gracePeriodMs: grace,
            keepaliveMaxServerConnectionAgeMs: keepalive,
            now: () => T0 + later,
          });
          const [object] = desiredWorkloadEntries([record], []).objects;
          expect(object).toBeDefined();
          expect(istiod.shouldCleanup(object as unknown as ModelEntry)).toBe(false);
          for (const key of ISTIOD_CONTROLLER_KEYS)
            expect(object?.metadata.annotations?.[key]).toBeUndefined();
          expect(istiodRoutesTo(object as unknown as WorkloadEntry)).toBe(
            servingState(record).ready,
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keeps what istiod’s keys said under the registrar’s own, and the workload name', () => {
    const record = entryRecord('vm-10-0-0-1', { connectedAt: T0 });
    const [object] = desiredWorkloadEntries([record], []).objects;
    expect(object?.metadata.annotations).toMatchObject({
      [REGISTRAR_ANNOTATIONS.autoRegistrationGroup]: 'vm',
      [REGISTRAR_ANNOTATIONS.workloadController]: 'workload-registrar',
      [REGISTRAR_ANNOTATIONS.connectedAt]: '2025-01-02T03:04:05.000Z',
      'team.example.com/owner': 'payments',
    });
    expect(object?.metadata.labels?.[WORKLOAD_NAME_LABEL]).toBe('vm');
  });

  it('leaves a workload name the group or agent chose', () => {
    const record = entryRecord('vm-10-0-0-1', {
      connectedAt: T0,
      labels: { app: 'cart', [WORKLOAD_NAME_LABEL]: 'cart-vms' },
    });
    const [object] = desiredWorkloadEntries([record], []).objects;
    expect(object?.metadata.labels?.[WORKLOAD_NAME_LABEL]).toBe('cart-vms');
  });

  it('writes no annotations map when nothing is left', () => {
    expect(clusterAnnotations(undefined)).toBeUndefined();
    expect(clusterAnnotations({})).toBeUndefined();
    expect(clusterAnnotations({ 'istio.io/disconnectedAt': 'x' })).toEqual({
      [REGISTRAR_ANNOTATIONS.disconnectedAt]: 'x',
    });
  });

  it('the model itself takes 0.2.0’s shape for its own: an old connection is cleaned', () => {
    const istiod = startIstiodControllerModel({
      url: 'http://127.0.0.1:1',
      gracePeriodMs: 10_000,
      keepaliveMaxServerConnectionAgeMs: 30 * 60_000,
      now: () => T0 + 46 * 60_000, // Helm's 30 min keepalive: stale after 45 min
    });
    const old: ModelEntry = {
      metadata: {
        name: 'vm-10-0-0-1',
        namespace: 'shop',
        annotations: {
          'istio.io/autoRegistrationGroup': 'vm',
          'istio.io/workloadController': 'workload-registrar',
          'istio.io/connectedAt': new Date(T0).toISOString(),
        },
      },
    };
    expect(istiod.shouldCleanup(old)).toBe(true);
    const young = structuredClone(old);
    (young.metadata.annotations as Record<string, string>)['istio.io/connectedAt'] = new Date(
      T0 + 2 * 60_000,
    ).toISOString();
    expect(istiod.shouldCleanup(young)).toBe(false);
  });
});
