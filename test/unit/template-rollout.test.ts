import { describe, expect, it } from 'vitest';
import { agentGivenOf } from '../../lib/domain/agent-given.ts';
import { buildEntry } from '../../lib/domain/build-entry.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import {
  identityChanges,
  isOnCurrentTemplate,
  rolledOutEntry,
} from '../../lib/domain/template-rollout.ts';

const T0 = Date.parse('2026-12-01T10:00:00Z');

function group(
  template: WorkloadGroup['spec']['template'],
  extra: Partial<WorkloadGroup['spec']> = {},
): WorkloadGroup {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: 'shop', uid: 'uid-1' },
    spec: { template, ...extra },
  };
}

describe('rolledOutEntry', () => {
  const before = group(
    {
      labels: { version: 'v1', tier: 'back' },
      ports: { http: 8080 },
      serviceAccount: 'web',
      locality: 'eu-west-1/a',
    },
    { metadata: { labels: { app: 'web' }, annotations: { team: 'a' } } },
  );
  const request = {
    group: 'web',
    namespace: 'shop',
    ips: ['10.0.0.1'],
    labels: { version: 'canary', rack: 'r1' },
  };
  const built = buildEntry(before, request, T0);

  it('is what a fresh registration from the new template would build, identity and name aside', () => {
    const after = group(
      {
        labels: { version: 'v2', tier: 'front' },
        ports: { http: 9090 },
        weight: 7,
        serviceAccount: 'web',
        locality: 'eu-west-1/b',
      },
      { metadata: { labels: { app: 'web', owner: 'x' }, annotations: { team: 'b' } } },
    );
    const rolled = rolledOutEntry(built, after, agentGivenOf(request));
    const fresh = buildEntry(after, request, T0);
    expect(rolled).toEqual(fresh);
  });

  it('lets the agent win over the template and the group, but never with istio-locality', () => {
    const given = { labels: { version: 'canary', 'istio-locality': 'x.y' } };
    const rolled = rolledOutEntry(built, group({ labels: { version: 'v2' } }), given);
    expect(rolled.metadata.labels).toEqual({ version: 'canary' });
    expect(rolled.spec.labels).toEqual({ version: 'canary' });
  });

  it("lets the group's new value win for labels only the group sets, even when the agent repeated the old one", () => {
    // An entry of an older release still carries what its agent chose for `app` (Istio's
    // canonical service); its agent repeated the group's tlsMode at registration.
    const given = {
      labels: { app: 'payments', 'security.istio.io/tlsMode': 'istio', version: 'canary' },
    };
    const after = group(
      { labels: { 'security.istio.io/tlsMode': 'disabled', version: 'v2' } },
      {
        metadata: { labels: { app: 'web' } },
      },
    );
    expect(rolledOutEntry(built, after, given).spec.labels).toEqual({
      'security.istio.io/tlsMode': 'disabled',
      app: 'web',
      version: 'canary',
    });
  });

  it("keeps the agent's locality, and follows the template's when the agent named none", () => {
    const after = group({ locality: 'eu-west-1/c' });
    expect(
      rolledOutEntry(built, after, { labels: {}, locality: 'us-east-1/a' }).spec.locality,
    ).toBe('us-east-1/a');
    expect(rolledOutEntry(built, after, { labels: {} }).spec.locality).toBe('eu-west-1/c');
  });

  it('never changes the service account, network, address, name or creation time', () => {
    const after = group({ serviceAccount: 'api', network: 'n2' });
    const rolled = rolledOutEntry(built, after, { labels: {} });
    expect(rolled.spec).toMatchObject({ serviceAccount: 'web', address: '10.0.0.1' });
    expect(rolled.spec.network).toBeUndefined();
    expect(rolled.metadata).toMatchObject({
      name: 'web-10.0.0.1',
      creationTimestamp: built.metadata.creationTimestamp,
    });
  });

  it('drops ports and weight the template no longer has, and strips system annotations the group sets', () => {
    const after = group(
      {},
      { metadata: { annotations: { 'istio.io/connectedAt': 'forged', keep: 'yes' } } },
    );
    const rolled = rolledOutEntry(built, after, { labels: {} });
    expect(rolled.spec.ports).toBeUndefined();
    expect(rolled.spec.weight).toBeUndefined();
    expect(rolled.metadata.annotations).toEqual({ keep: 'yes' });
  });
});

describe('identityChanges', () => {
  it('names a changed service account or network, "" being unset', () => {
    expect(
      identityChanges(group({ serviceAccount: 'a' }), group({ serviceAccount: 'b', network: 'n' })),
    ).toEqual([
      { field: 'serviceAccount', from: 'a', to: 'b' },
      { field: 'network', from: undefined, to: 'n' },
    ]);
    expect(identityChanges(group({ serviceAccount: '' }), group({}))).toEqual([]);
    expect(identityChanges(undefined, group({ serviceAccount: 'a' }))).toEqual([]);
  });
});

describe('isOnCurrentTemplate', () => {
  const entry = buildEntry(
    group({ serviceAccount: 'web' }),
    { group: 'web', namespace: 'shop', ips: ['10.0.0.1'], labels: {} },
    T0,
  );

  it("needs the current generation and the template's identity", () => {
    const current = group({ serviceAccount: 'web' });
    expect(isOnCurrentTemplate({ entry, groupGeneration: 2 }, current, 2)).toBe(true);
    expect(isOnCurrentTemplate({ entry, groupGeneration: 1 }, current, 2)).toBe(false);
    expect(isOnCurrentTemplate({ entry }, current, 2)).toBe(false);
    expect(
      isOnCurrentTemplate({ entry, groupGeneration: 2 }, group({ serviceAccount: 'api' }), 2),
    ).toBe(false);
  });

  it('counts a template network the entry lacks, but not one the agent chose', () => {
    const byTemplate = group({ serviceAccount: 'web', network: 'n2' });
    expect(isOnCurrentTemplate({ entry, groupGeneration: 2 }, byTemplate, 2)).toBe(false);
    // The agent named network n1: the entry's name carries it.
    const agents = buildEntry(
      group({ serviceAccount: 'web' }),
      { group: 'web', namespace: 'shop', ips: ['10.0.0.1'], network: 'n1', labels: {} },
      T0,
    );
    expect(agents.metadata.name).toBe('web-10.0.0.1-n1');
    expect(isOnCurrentTemplate({ entry: agents, groupGeneration: 2 }, byTemplate, 2)).toBe(true);
    // The old template gave n1: not in the name, and no longer the template's.
    const templates = buildEntry(
      group({ serviceAccount: 'web', network: 'n1' }),
      { group: 'web', namespace: 'shop', ips: ['10.0.0.1'], labels: {} },
      T0,
    );
    expect(isOnCurrentTemplate({ entry: templates, groupGeneration: 2 }, byTemplate, 2)).toBe(
      false,
    );
  });
});
