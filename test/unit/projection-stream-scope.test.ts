import { describe, expect, it } from 'vitest';
import { parseTargets, readProjectorConfig } from '../../lib/projection/projector-config.ts';
import { servingState } from '../../lib/projection/serving.ts';
import { scopeOfStream } from '../../lib/projection/stream-scope.ts';
import { entryRecord, T0 } from '../fixtures/projection-records.ts';

const record = (pk: string, sk: string) => ({
  dynamodb: { Keys: { pk: { S: pk }, sk: { S: sk } } },
});

describe('stream scope', () => {
  it('collects the changed entries per namespace', () => {
    expect(
      scopeOfStream([
        record('NS#b', 'WE#y'),
        record('NS#a', 'WE#x'),
        record('NS#b', 'WE#z'),
        record('NS#b', 'WE#y'),
      ]),
    ).toEqual({
      kind: 'namespaces',
      namespaces: [
        { namespace: 'a', changedEntries: ['x'] },
        { namespace: 'b', changedEntries: ['y', 'z'] },
      ],
    });
  });

  it('widens a namespace to all its Services when a group changed', () => {
    expect(
      scopeOfStream([record('NS#a', 'WE#x'), record('NS#a', 'WG#web'), record('NS#a', 'WE#y')]),
    ).toEqual({
      kind: 'namespaces',
      namespaces: [{ namespace: 'a' }],
    });
  });

  it('ignores connection and token records', () => {
    expect(scopeOfStream([record('CONN#c1', 'CONN'), record('TOKEN', 't1'), {}])).toEqual({
      kind: 'namespaces',
      namespaces: [],
    });
  });
});

describe('serving state', () => {
  it('is ready when connected and healthy, since the later of connect and transition', () => {
    expect(
      servingState(entryRecord('a', { connectedAt: T0, health: { status: 'True', at: T0 + 5 } })),
    ).toEqual({ ready: true, reason: 'Healthy', since: T0 + 5 });
  });

  it('is not ready before the first probe when the group has one', () => {
    expect(servingState(entryRecord('a', { connectedAt: T0 }))).toMatchObject({
      ready: false,
      reason: 'NotProbedYet',
    });
  });

  it('is ready when connected and the group has no probe', () => {
    expect(
      servingState(entryRecord('a', { connectedAt: T0, healthChecksEnabled: false })),
    ).toMatchObject({ ready: true, reason: 'Connected' });
  });

  it('is not ready once disconnected, even if the last report was healthy', () => {
    expect(
      servingState(
        entryRecord('a', { disconnectedAt: T0 + 9, health: { status: 'True', at: T0 } }),
      ),
    ).toEqual({ ready: false, reason: 'Disconnected', since: T0 + 9 });
  });
});

describe('projector configuration', () => {
  it('reads targets and the EKS cluster', () => {
    expect(
      readProjectorConfig({
        REGISTRAR_PROJECTION_TARGETS: 'istio, endpointslices',
        REGISTRAR_EKS_CLUSTER_NAME: 'prod',
        REGISTRAR_EKS_ENDPOINT: 'https://abc.eks.amazonaws.com',
        REGISTRAR_EKS_CA: 'QUJD',
      }),
    ).toEqual({
      targets: ['istio', 'endpointslices'],
      clusterRanges: [],
      cluster: {
        kind: 'eks',
        clusterName: 'prod',
        endpoint: 'https://abc.eks.amazonaws.com',
        certificateAuthority: 'QUJD',
      },
    });
  });

  it("reads the cluster's ranges, and names the variable and the item it refuses", () => {
    const env = {
      REGISTRAR_PROJECTION_TARGETS: 'istio',
      REGISTRAR_KUBECONFIG: '/tmp/kc',
    };
    expect(
      readProjectorConfig({
        ...env,
        REGISTRAR_CLUSTER_RANGES: '10.96.0.0/12, fd00:10::/108',
      }).clusterRanges.map((range) => range.text),
    ).toEqual(['10.96.0.0/12', 'fd00:10::/108']);
    expect(() => readProjectorConfig({ ...env, REGISTRAR_CLUSTER_RANGES: '10.96.0.0' })).toThrow(
      "invalid REGISTRAR_CLUSTER_RANGES '10.96.0.0': '10.96.0.0' must be a CIDR",
    );
  });

  it('names the variable and value it refuses', () => {
    expect(() =>
      readProjectorConfig({
        REGISTRAR_PROJECTION_TARGETS: 'istio',
        REGISTRAR_EKS_CLUSTER_NAME: 'prod',
        REGISTRAR_EKS_ENDPOINT: 'http://x',
        REGISTRAR_EKS_CA: 'QUJD',
      }),
    ).toThrow("REGISTRAR_EKS_ENDPOINT (value 'http://x')");
    expect(() => parseTargets('istio,consul')).toThrow("invalid projection targets 'istio,consul'");
    expect(() => parseTargets('')).toThrow('invalid projection targets');
  });
});
