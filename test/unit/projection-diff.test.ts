import { describe, expect, it } from 'vitest';
import { diff } from '../../lib/projection/diff.ts';
import type { KubeObject } from '../../lib/projection/objects.ts';

function object(
  name: string,
  fields: Partial<KubeObject> & { labels?: Record<string, string> } = {},
): KubeObject {
  const { labels, ...rest } = fields;
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: {
      name,
      namespace: 'shop',
      labels: labels ?? { app: 'a', 'app.kubernetes.io/managed-by': 'workload-registrar' },
    },
    spec: { address: '10.0.0.1' },
    ...rest,
  };
}

const HEALTHY = { conditions: [{ type: 'Healthy', status: 'True' as const }] };
const UNHEALTHY = { conditions: [{ type: 'Healthy', status: 'False' as const }] };

function actual(o: KubeObject, extra: Partial<KubeObject['metadata']> = {}): KubeObject {
  return {
    ...o,
    metadata: { ...o.metadata, uid: 'u1', resourceVersion: '7', finalizers: ['x'], ...extra },
  };
}

describe('diff', () => {
  it('creates what is missing and deletes what is no longer desired', () => {
    const actions = diff({
      kind: 'WorkloadEntry',
      statusSubresource: true,
      desired: [object('new')],
      actual: [actual(object('old'))],
    });
    expect(actions.map((a) => [a.type, a.object.metadata.name])).toEqual([
      ['create', 'new'],
      ['delete', 'old'],
    ]);
  });

  it('writes nothing when only server-side fields differ', () => {
    const actions = diff({
      kind: 'WorkloadEntry',
      statusSubresource: true,
      desired: [object('a', { status: HEALTHY })],
      actual: [actual(object('a', { status: HEALTHY }), { generation: 3, managedFields: [] })],
    });
    expect(actions).toEqual([]);
  });

  it('replaces a hand-edited spec at the version it read, keeping server fields', () => {
    const [action] = diff({
      kind: 'WorkloadEntry',
      statusSubresource: true,
      desired: [object('a')],
      actual: [actual(object('a', { spec: { address: '9.9.9.9' } }))],
    });
    expect(action?.type).toBe('replace');
    expect(action?.object.metadata).toMatchObject({
      resourceVersion: '7',
      uid: 'u1',
      finalizers: ['x'],
    });
    expect(action?.object.spec).toEqual({ address: '10.0.0.1' });
  });

  it('writes a status-only change through the status subresource', () => {
    const [action, ...rest] = diff({
      kind: 'WorkloadEntry',
      statusSubresource: true,
      desired: [object('a', { status: UNHEALTHY })],
      actual: [actual(object('a', { status: HEALTHY }))],
    });
    expect(rest).toEqual([]);
    expect(action?.type).toBe('replaceStatus');
    expect(action?.object.status).toEqual(UNHEALTHY);
  });

  it('writes status with the object for kinds without a status subresource', () => {
    const [action] = diff({
      kind: 'ExternalWorkload',
      statusSubresource: false,
      desired: [object('a', { status: UNHEALTHY })],
      actual: [actual(object('a', { status: HEALTHY }))],
    });
    expect(action).toMatchObject({ type: 'replace', object: { status: UNHEALTHY } });
  });

  it('replaces the object then its status when both changed and it comes into traffic', () => {
    const [action] = diff({
      kind: 'WorkloadEntry',
      statusSubresource: true,
      desired: [object('a', { labels: { app: 'b' }, status: HEALTHY })],
      actual: [actual(object('a', { status: UNHEALTHY }))],
    });
    expect(action).toMatchObject({ type: 'replace', status: HEALTHY });
    expect(action).not.toHaveProperty('leavesTraffic');
  });

  it('marks a change that takes a True condition away, so its status is written first', () => {
    // A crash: new annotations and Healthy True -> False. istiod acts on the status alone.
    const [both] = diff({
      kind: 'WorkloadEntry',
      statusSubresource: true,
      desired: [object('a', { labels: { app: 'b' }, status: UNHEALTHY })],
      actual: [actual(object('a', { status: HEALTHY }))],
    });
    expect(both).toMatchObject({ type: 'replace', status: UNHEALTHY, leavesTraffic: true });
    const [statusOnly] = diff({
      kind: 'WorkloadEntry',
      statusSubresource: true,
      desired: [object('a')],
      actual: [actual(object('a', { status: HEALTHY }))],
    });
    expect(statusOnly).toMatchObject({ type: 'replaceStatus', leavesTraffic: true });
  });

  it('does not mark a status change that keeps True, or an object that carries its status', () => {
    const [probeTime] = diff({
      kind: 'WorkloadEntry',
      statusSubresource: true,
      desired: [
        object('a', {
          status: { conditions: [{ type: 'Healthy', status: 'True', message: 'm' }] },
        }),
      ],
      actual: [actual(object('a', { status: HEALTHY }))],
    });
    expect(probeTime).toMatchObject({ type: 'replaceStatus' });
    expect(probeTime).not.toHaveProperty('leavesTraffic');
    const [linkerd] = diff({
      kind: 'ExternalWorkload',
      statusSubresource: false,
      desired: [object('a', { status: UNHEALTHY })],
      actual: [actual(object('a', { status: HEALTHY }))],
    });
    expect(linkerd).not.toHaveProperty('leavesTraffic');
  });

  it('keeps objects it is told to keep (entries that could not be projected)', () => {
    expect(
      diff({
        kind: 'ExternalWorkload',
        statusSubresource: false,
        desired: [],
        actual: [actual(object('a'))],
        keep: new Set(['shop/a']),
      }),
    ).toEqual([]);
  });
});
