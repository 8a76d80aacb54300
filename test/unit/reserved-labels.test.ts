import { describe, expect, it } from 'vitest';
import {
  isGroupOnlyLabel,
  isReservedLabelKey,
  reservedLabelProblems,
} from '../../lib/domain/reserved-labels.ts';

const PLACEMENT = {
  network: 'shop-net',
  locality: 'eu-west-1/eu-west-1a/rack-7',
  groupLabels: { app: 'web', 'security.istio.io/tlsMode': 'istio' },
};

describe('reserved labels', () => {
  it('accepts topology labels that agree with the entry and group labels repeated as they are', () => {
    expect(
      reservedLabelProblems(
        {
          'topology.istio.io/network': 'shop-net',
          'topology.istio.io/subzone': 'rack-7',
          'topology.istio.io/locality': 'eu-west-1.eu-west-1a.rack-7',
          'topology.kubernetes.io/region': 'eu-west-1',
          'topology.kubernetes.io/zone': 'eu-west-1a',
          'failure-domain.beta.kubernetes.io/zone': 'eu-west-1a',
          'security.istio.io/tlsMode': 'istio',
          app: 'web',
          version: 'canary',
          'app.kubernetes.io/version': 'v2',
          'registrar.io/instance-id': 'i-0123456789abcdef0',
        },
        PLACEMENT,
      ),
    ).toEqual([]);
  });

  it('refuses a network label that names another network, with both values', () => {
    expect(reservedLabelProblems({ 'topology.istio.io/network': 'prod-net' }, PLACEMENT)).toEqual([
      "label 'topology.istio.io/network' is 'prod-net' but the entry's network is 'shop-net': a topology label must agree with the entry's placement; drop the label or send the same network",
    ]);
  });

  it('refuses a network label on an entry without a network (Istio would place it there)', () => {
    const [problem] = reservedLabelProblems(
      { 'topology.istio.io/network': 'prod-net' },
      { ...PLACEMENT, network: undefined },
    );
    expect(problem).toContain("is 'prod-net' but the entry's network is unset");
  });

  it.each([
    ['topology.kubernetes.io/zone', 'eu-west-1b', "zone is 'eu-west-1a'"],
    ['topology.kubernetes.io/region', 'us-east-1', "region is 'eu-west-1'"],
    ['failure-domain.beta.kubernetes.io/region', 'us-east-1', "region is 'eu-west-1'"],
    ['topology.istio.io/subzone', 'rack-1', "subzone is 'rack-7'"],
    [
      'topology.istio.io/locality',
      'us-east-1.us-east-1a',
      "locality is 'eu-west-1.eu-west-1a.rack-7'",
    ],
  ])('refuses %s=%s, naming the entry value', (key, value, trusted) => {
    const [problem] = reservedLabelProblems({ [key]: value }, PLACEMENT);
    expect(problem).toContain(`label '${key}' is '${value}' but the entry's ${trusted}`);
  });

  it.each([
    ['security.istio.io/tlsMode', 'disabled', "sets 'istio'"],
    ['service.istio.io/canonical-name', 'payments', 'does not set it'],
    ['istio.io/rev', 'canary', 'does not set it'],
    ['networking.istio.io/gatewayPort', '15443', 'does not set it'],
    ['kubernetes.io/service-name', 'payments', 'does not set it'],
    ['endpointslice.kubernetes.io/managed-by', 'me', 'does not set it'],
    ['gateway.networking.k8s.io/gateway-name', 'gw', 'does not set it'],
  ])('refuses %s=%s from an agent when the group %s', (key, value, group) => {
    const [problem] = reservedLabelProblems({ [key]: value }, PLACEMENT);
    expect(problem).toContain(`label '${key}' is '${value}' but the WorkloadGroup ${group}`);
  });

  it('names every disagreeing label, not only the first', () => {
    expect(
      reservedLabelProblems(
        { 'topology.istio.io/network': 'x', 'istio.io/rev': 'y', app: 'z', tier: 'front' },
        PLACEMENT,
      ),
    ).toHaveLength(3);
  });

  it.each([
    ['app', 'payments', "sets 'web'"],
    ['app.kubernetes.io/name', 'payments', 'does not set it'],
  ])(
    "refuses %s=%s: Istio's canonical service would follow it, and the group %s",
    (key, value, group) => {
      const [problem] = reservedLabelProblems({ [key]: value }, PLACEMENT);
      expect(problem).toBe(
        `label '${key}' is '${value}' but the WorkloadGroup ${group}: Istio derives the canonical service from it (service.istio.io/canonical-name, else app.kubernetes.io/name, else app), which comes only from the group, as service.istio.io/canonical-name does; drop the label, or set it in the group`,
      );
    },
  );

  it('leaves the revision sources to the agent: a revision only divides its own canonical service', () => {
    expect(
      reservedLabelProblems({ version: 'canary', 'app.kubernetes.io/version': '2.1' }, PLACEMENT),
    ).toEqual([]);
  });

  it.each(Object.getOwnPropertyNames(Object.prototype))(
    'treats the key %s as a label, not as a member of Object.prototype',
    (name) => {
      expect(reservedLabelProblems({ [name]: 'x' }, PLACEMENT)).toEqual([]);
      expect(reservedLabelProblems({ [name]: 'x' }, { ...PLACEMENT, groupLabels: {} })).toEqual([]);
      expect(isGroupOnlyLabel(name)).toBe(false);
    },
  );

  it('reserves the Istio and Kubernetes domains and their subdomains only', () => {
    expect(isReservedLabelKey('istio.io/rev')).toBe(true);
    expect(isReservedLabelKey('sidecar.istio.io/inject')).toBe(true);
    expect(isReservedLabelKey('node.kubernetes.io/instance-type')).toBe(true);
    expect(isReservedLabelKey('k8s.io/x')).toBe(true);
    expect(isReservedLabelKey('myistio.io/x')).toBe(false);
    expect(isReservedLabelKey('example.com/istio.io')).toBe(false);
    expect(isReservedLabelKey('istio.io')).toBe(false);
    // Kubernetes' recommended labels are the user's, as `app` is.
    expect(isReservedLabelKey('app.kubernetes.io/name')).toBe(false);
  });
});
