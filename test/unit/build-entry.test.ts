import { describe, expect, it } from 'vitest';
import { buildEntry, buildRegistration } from '../../lib/domain/build-entry.ts';
import { renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
import type { ConnectRequest, WorkloadGroup } from '../../lib/domain/model.ts';

const CONNECTED_AT = Date.UTC(2026, 0, 2, 3, 4, 5, 600);

function group(overrides: Partial<WorkloadGroup['spec']> = {}): WorkloadGroup {
  return {
    apiVersion: 'networking.istio.io/v1beta1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: 'shop', uid: 'uid-1', generation: 3 },
    spec: {
      metadata: {
        labels: { app: 'web', tier: 'group-metadata' },
        annotations: { team: 'payments' },
      },
      template: {
        ports: { http: 8080 },
        serviceAccount: 'web-sa',
        network: 'template-net',
        locality: 'eu-west-1/eu-west-1a',
        weight: 5,
        labels: { tier: 'template', version: 'v1', zone: 'template' },
      },
      ...overrides,
    },
  };
}

function request(overrides: Partial<ConnectRequest> = {}): ConnectRequest {
  return {
    group: 'web',
    namespace: 'shop',
    ips: ['10.0.0.7', '10.0.1.7'],
    labels: {},
    ...overrides,
  };
}

describe('buildEntry', () => {
  it('copies the template and takes the first IP as the address', () => {
    const entry = buildEntry(group(), request(), CONNECTED_AT);
    expect(entry.spec).toMatchObject({
      address: '10.0.0.7',
      ports: { http: 8080 },
      serviceAccount: 'web-sa',
      weight: 5,
    });
    expect(entry.metadata.name).toBe('web-10.0.0.7');
    expect(entry.metadata.namespace).toBe('shop');
  });

  it("uses the template's network and locality when the agent gives none", () => {
    const entry = buildEntry(group(), request(), CONNECTED_AT);
    expect(entry.spec.network).toBe('template-net');
    expect(entry.spec.locality).toBe('eu-west-1/eu-west-1a');
  });

  it("prefers the agent's network and locality, and names the entry after the network", () => {
    const entry = buildEntry(
      group(),
      request({ network: 'vpc-9', locality: 'us-east-1/us-east-1b' }),
      CONNECTED_AT,
    );
    expect(entry.spec.network).toBe('vpc-9');
    expect(entry.spec.locality).toBe('us-east-1/us-east-1b');
    expect(entry.metadata.name).toBe('web-10.0.0.7-vpc-9');
  });

  it('merges labels template, then group metadata, then agent: later wins', () => {
    const entry = buildEntry(
      group(),
      request({ labels: { version: 'v2', host: 'vm-7' } }),
      CONNECTED_AT,
    );
    const expected = {
      app: 'web',
      tier: 'group-metadata',
      version: 'v2',
      zone: 'template',
      host: 'vm-7',
    };
    expect(entry.spec.labels).toEqual(expected);
    expect(entry.metadata.labels).toEqual(expected);
  });

  it('drops an istio-locality label sent by the agent', () => {
    const entry = buildEntry(
      group(),
      request({ labels: { 'istio-locality': 'mars.crater', tier: 'agent' } }),
      CONNECTED_AT,
    );
    expect(entry.spec.labels).not.toHaveProperty('istio-locality');
    expect(entry.spec.labels?.tier).toBe('agent');
  });

  it("never takes app (Istio's canonical service source) from the agent over the group", () => {
    const entry = buildEntry(
      group({ metadata: { labels: { app: 'web' } } }),
      request({ labels: { app: 'payments', 'app.kubernetes.io/name': 'payments' } }),
      CONNECTED_AT,
    );
    expect(entry.spec.labels?.app).toBe('web');
    expect(entry.spec.labels).not.toHaveProperty('app.kubernetes.io/name');
  });

  it("carries the group's annotations but drops system keys a group tries to forge", () => {
    const forged = group({
      metadata: {
        annotations: {
          team: 'payments',
          'istio.io/autoRegistrationGroup': 'other-group',
          'istio.io/workloadController': 'evil',
          'istio.io/connectedAt': '2000-01-01T00:00:00Z',
          'istio.io/disconnectedAt': '2000-01-01T00:00:00Z',
          'proxy.istio.io/health-checks-enabled': 'true',
        },
      },
    });
    const entry = buildEntry(forged, request(), CONNECTED_AT);
    expect(entry.metadata.annotations).toEqual({ team: 'payments' });
  });

  it('renders the system annotations from connection state, never from the group', () => {
    const forged = group({
      metadata: { annotations: { 'istio.io/autoRegistrationGroup': 'other-group' } },
    });
    const built = buildRegistration(forged, request(), CONNECTED_AT);
    const rendered = renderWorkloadEntry({
      entry: built.entry,
      autoRegistrationGroup: built.autoRegistrationGroup,
      healthChecksEnabled: built.healthChecksEnabled,
      connection: { controller: 'registrar', connectedAt: CONNECTED_AT, connectionIds: ['c1'] },
      revision: 1,
    });
    expect(rendered.metadata.annotations).toEqual({
      'istio.io/autoRegistrationGroup': 'web',
      'istio.io/workloadController': 'registrar',
      'istio.io/connectedAt': '2026-01-02T03:04:05.600Z',
    });
  });

  it('points one controller ownerReference at the group', () => {
    const entry = buildEntry(group(), request(), CONNECTED_AT);
    expect(entry.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'networking.istio.io/v1beta1',
        kind: 'WorkloadGroup',
        name: 'web',
        uid: 'uid-1',
        controller: true,
      },
    ]);
  });

  it('stamps the creation time from the server connect time', () => {
    const entry = buildEntry(group(), request(), CONNECTED_AT);
    expect(entry.metadata.creationTimestamp).toBe('2026-01-02T03:04:05.600Z');
  });

  it('does not share objects with the group: changing the entry leaves the template alone', () => {
    const source = group();
    const entry = buildEntry(source, request(), CONNECTED_AT);
    if (entry.spec.ports) entry.spec.ports.http = 1;
    expect(source.spec.template.ports?.http).toBe(8080);
  });
});

describe('buildRegistration', () => {
  it('enables health checks when the group has a probe', () => {
    const probed = group({ probe: { httpGet: { port: 8080, path: '/ready' } } });
    expect(buildRegistration(probed, request(), CONNECTED_AT).healthChecksEnabled).toBe(true);
  });

  it('leaves health checks off without a probe and names the registering group', () => {
    const built = buildRegistration(group(), request(), CONNECTED_AT);
    expect(built.healthChecksEnabled).toBe(false);
    expect(built.autoRegistrationGroup).toBe('web');
  });
});
