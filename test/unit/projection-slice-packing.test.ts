import { describe, expect, it } from 'vitest';
import { desiredEndpointGroups } from '../../lib/projection/desired-endpoints.ts';
import type { EndpointSliceObject, ServiceObject } from '../../lib/projection/objects.ts';
import { planServiceSlices, type SlicePlan } from '../../lib/projection/slice-packing.ts';
import { entryRecord, T0 } from '../fixtures/projection-records.ts';

const SERVICE: ServiceObject = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'cart', namespace: 'shop', uid: 'svc-uid' },
  spec: {
    selector: { app: 'cart' },
    clusterIP: '172.20.0.1',
    ports: [{ name: 'http', port: 80, targetPort: 8080 }],
  },
};

function entries(count: number, from = 0, health: 'True' | 'False' = 'True') {
  return Array.from({ length: count }, (_, i) =>
    entryRecord(`vm-${String(from + i).padStart(4, '0')}`, {
      address: `10.0.${Math.floor((from + i) / 250)}.${(from + i) % 250}`,
      health: { status: health, at: T0 },
    }),
  );
}

function plan(
  records: ReturnType<typeof entries>,
  existing: EndpointSliceObject[] = [],
  service: ServiceObject | undefined = SERVICE,
): SlicePlan {
  return planServiceSlices({
    namespace: 'shop',
    serviceName: 'cart',
    service,
    groups: service ? desiredEndpointGroups(service, records) : [],
    existing,
    takenNames: new Set(existing.map((s) => s.metadata.name)),
  });
}

/** What the API server would hold after the plan: created and updated slices with versions. */
function applied(result: SlicePlan): EndpointSliceObject[] {
  return [...result.create, ...result.update].map((s, i) => ({
    ...s,
    metadata: { ...s.metadata, resourceVersion: String(i + 1), uid: `uid-${s.metadata.name}` },
  }));
}

describe('EndpointSlice packing', () => {
  it('fills slices to 100 endpoints: 250 entries give 100, 100 and 50', () => {
    const result = plan(entries(250));
    expect(result.create.map((s) => s.endpoints.length)).toEqual([100, 100, 50]);
    expect(result.update).toEqual([]);
  });

  it('gives new slices distinct names from the Service name, the same on every run', () => {
    const first = plan(entries(250)).create.map((s) => s.metadata.name);
    expect(new Set(first).size).toBe(3);
    expect(first.every((name) => /^cart-[bcdfghjklmnpqrstvwxz2456789]{5}$/.test(name))).toBe(true);
    expect(plan(entries(250)).create.map((s) => s.metadata.name)).toEqual(first);
  });

  it('plans nothing when the slices already hold the desired endpoints', () => {
    const existing = applied(plan(entries(250)));
    expect(plan(entries(250), existing)).toEqual({ create: [], update: [], delete: [] });
  });

  it('updates only the slice of a changed endpoint, in place', () => {
    const existing = applied(plan(entries(250)));
    const changed = [...entries(120), ...entries(1, 120, 'False'), ...entries(129, 121)];
    const result = plan(changed, existing);
    expect(result.create).toEqual([]);
    expect(result.delete).toEqual([]);
    expect(result.update).toHaveLength(1);
    expect(result.update[0]?.metadata.resourceVersion).toBeDefined();
  });

  it('adds new endpoints to a slice with room before creating a slice', () => {
    const existing = applied(plan(entries(250)));
    const result = plan(entries(260), existing);
    expect(result.create).toEqual([]);
    expect(result.update.map((s) => s.endpoints.length)).toEqual([60]);
  });

  it('reuses a slice to be deleted instead of deleting one and creating another', () => {
    const existing = applied(plan(entries(10)));
    const otherPorts: ServiceObject = {
      ...SERVICE,
      spec: { ...SERVICE.spec, ports: [{ name: 'grpc', port: 90, targetPort: 9090 }] },
    };
    const result = plan(entries(10), existing, otherPorts);
    expect(result.create).toEqual([]);
    expect(result.delete).toEqual([]);
    expect(result.update.map((s) => [s.metadata.name, s.ports])).toEqual([
      [existing[0]?.metadata.name, [{ name: 'grpc', port: 9090, protocol: 'TCP' }]],
    ]);
  });

  it('deletes every slice of a Service that is gone', () => {
    const existing = applied(plan(entries(150)));
    const result = planServiceSlices({
      namespace: 'shop',
      serviceName: 'cart',
      service: undefined,
      groups: [],
      existing,
      takenNames: new Set(),
    });
    expect(result.delete).toHaveLength(2);
    expect(result.create).toEqual([]);
  });

  it('drops a second copy of an endpoint left by two racing projectors', () => {
    const one = applied(plan(entries(5)));
    const copy = {
      ...(one[0] as EndpointSliceObject),
      metadata: { ...(one[0] as EndpointSliceObject).metadata, name: 'cart-copy1' },
    };
    const result = plan(entries(5), [...one, copy]);
    // Whichever copy sorts first keeps the endpoints; the other is deleted, not rewritten.
    expect(result.delete).toHaveLength(1);
    expect(result.update).toEqual([]);
    expect(result.create).toEqual([]);
  });
});

describe('desired endpoints', () => {
  it('groups by address family and publishes unready entries as ready: false', () => {
    const records = [
      entryRecord('v4', { address: '10.0.0.1', health: { status: 'False', at: T0 } }),
      entryRecord('v6', { address: 'fd00::1', health: { status: 'True', at: T0 } }),
      entryRecord('dns', { address: 'vm.example.com' }),
    ];
    const dual: ServiceObject = {
      ...SERVICE,
      spec: { ...SERVICE.spec, ipFamilies: ['IPv4', 'IPv6'] },
    };
    const groups = desiredEndpointGroups(dual, records);
    expect(
      groups.map((g) => [
        g.addressType,
        g.endpoints.map((e) => [e.targetRef.name, e.conditions.ready]),
      ]),
    ).toEqual([
      ['IPv4', [['v4', false]]],
      ['IPv6', [['v6', true]]],
    ]);
  });

  it('resolves a named targetPort from the entry ports, and leaves the port out when missing', () => {
    const named: ServiceObject = {
      ...SERVICE,
      spec: {
        ...SERVICE.spec,
        ports: [
          { name: 'web', port: 80, targetPort: 'http' },
          { name: 'admin', port: 81, targetPort: 'admin' },
        ],
      },
    };
    const [group] = desiredEndpointGroups(named, [entryRecord('a', { ports: { http: 8080 } })]);
    expect(group?.ports).toEqual([{ name: 'web', port: 8080, protocol: 'TCP' }]);
  });

  it('marks endpoints ready for a Service that publishes not-ready addresses', () => {
    const publish: ServiceObject = {
      ...SERVICE,
      spec: { ...SERVICE.spec, publishNotReadyAddresses: true },
    };
    const [group] = desiredEndpointGroups(publish, [
      entryRecord('a', { health: { status: 'False', at: T0 } }),
    ]);
    expect(group?.endpoints[0]?.conditions).toEqual({
      ready: true,
      serving: false,
      terminating: false,
    });
  });

  it('selects nothing for ExternalName Services or Services without a selector', () => {
    const external: ServiceObject = { ...SERVICE, spec: { ...SERVICE.spec, type: 'ExternalName' } };
    const noSelector: ServiceObject = { ...SERVICE, spec: { ...SERVICE.spec, selector: {} } };
    expect(desiredEndpointGroups(external, entries(3))).toEqual([]);
    expect(desiredEndpointGroups(noSelector, entries(3))).toEqual([]);
  });
});
