import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitFor } from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  entryName,
  NAMESPACE,
  startAgentTestbed,
  type TestAgent,
} from '../fixtures/agent-testbed.ts';

/**
 * Reserved labels through real agents on the local runtime. The attacker holds a token for
 * `shop` and labels its VM so Istio reads it as another network (around address uniqueness),
 * turns off mTLS for it, or takes another service's canonical name; the honest agent sends the
 * network label Service Mesh Manager's pilot-agent sends, agreeing with its network.
 */
let bed: AgentTestbed;

beforeAll(async () => {
  bed = await startAgentTestbed();
  await bed.registry.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: NAMESPACE },
    spec: {
      metadata: { labels: { app: 'web' } },
      template: {
        ports: { http: 8080 },
        network: 'shop-net',
        locality: 'eu-west-1/eu-west-1a',
        labels: { 'security.istio.io/tlsMode': 'istio' },
      },
    },
  });
});
afterAll(() => bed?.close());

async function refusal(agent: TestAgent): Promise<string> {
  await waitFor(() => agent.events.some((e) => e.type === 'retry-scheduled'), 'a refusal', 10_000);
  await agent.stop();
  const line = agent.logs
    .map((text) => JSON.parse(text) as { msg: string; status?: number })
    .find((logged) => logged.status !== undefined);
  expect(line?.status).toBe(400);
  return line?.msg ?? '';
}

const timingOverrides = { refusalBackoffMs: 5_000, refusalBackoffCapMs: 5_000 };

describe('reserved labels from an agent', () => {
  it('refuses a network label that disagrees with the entry, naming both values; nothing written', async () => {
    const agent = await bed.agent({
      ips: ['10.0.5.1'],
      labels: { 'topology.istio.io/network': 'prod-net' },
      timingOverrides,
    });
    const message = await refusal(agent);
    expect(message).toContain(
      "label 'topology.istio.io/network' is 'prod-net' but the entry's network is 'shop-net'",
    );
    expect(await bed.entry(entryName('web', '10.0.5.1'))).toBeUndefined();
  });

  it('refuses a zone label that disagrees with the locality', async () => {
    const agent = await bed.agent({
      ips: ['10.0.5.2'],
      labels: { 'topology.kubernetes.io/zone': 'eu-west-1c' },
      timingOverrides,
    });
    expect(await refusal(agent)).toContain(
      "label 'topology.kubernetes.io/zone' is 'eu-west-1c' but the entry's zone is 'eu-west-1a'",
    );
  });

  it('refuses security and identity labels the group does not give it', async () => {
    const agent = await bed.agent({
      ips: ['10.0.5.3'],
      labels: {
        'security.istio.io/tlsMode': 'disabled',
        'service.istio.io/canonical-name': 'payments',
      },
      timingOverrides,
    });
    const message = await refusal(agent);
    expect(message).toContain(
      "label 'security.istio.io/tlsMode' is 'disabled' but the WorkloadGroup sets 'istio'",
    );
    expect(message).toContain(
      "label 'service.istio.io/canonical-name' is 'payments' but the WorkloadGroup does not set it",
    );
  });

  it("refuses app and app.kubernetes.io/name the group does not give it: Istio's canonical service would follow them", async () => {
    const agent = await bed.agent({
      ips: ['10.0.5.7'],
      labels: { app: 'payments', 'app.kubernetes.io/name': 'payments' },
      timingOverrides,
    });
    const message = await refusal(agent);
    expect(message).toContain(
      "label 'app' is 'payments' but the WorkloadGroup sets 'web': Istio derives the canonical service from it",
    );
    expect(message).toContain(
      "label 'app.kubernetes.io/name' is 'payments' but the WorkloadGroup does not set it",
    );
    expect(await bed.entry(entryName('web', '10.0.5.7'))).toBeUndefined();
  });

  it('accepts agreeing labels (as pilot-agent sends the network label) and stores them as given', async () => {
    const agent = await bed.agent({
      ips: ['10.0.5.4'],
      labels: {
        'topology.istio.io/network': 'shop-net',
        'topology.kubernetes.io/region': 'eu-west-1',
        'security.istio.io/tlsMode': 'istio',
        version: 'v2',
      },
    });
    const name = entryName('web', '10.0.5.4');
    await waitFor(() => agent.running.supervisor.entryName === `shop/${name}`, 'registered');
    const entry = await bed.entry(name);
    expect(entry?.we.spec.network).toBe('shop-net');
    expect(entry?.we.spec.labels).toEqual({
      app: 'web',
      'security.istio.io/tlsMode': 'istio',
      'topology.istio.io/network': 'shop-net',
      'topology.kubernetes.io/region': 'eu-west-1',
      version: 'v2',
    });
    await agent.stop();
  });

  it('adds nothing istiod would not: an agent without labels gets the group labels only', async () => {
    const agent = await bed.agent({ ips: ['10.0.5.5'] });
    const name = entryName('web', '10.0.5.5');
    await waitFor(() => agent.running.supervisor.entryName === `shop/${name}`, 'registered');
    expect((await bed.entry(name))?.we.spec.labels).toEqual({
      app: 'web',
      'security.istio.io/tlsMode': 'istio',
    });
    await agent.stop();
  });

  it('checks the network label against the network the agent names, not the template', async () => {
    const agent = await bed.agent({
      ips: ['10.0.5.6'],
      network: 'edge-net',
      labels: { 'topology.istio.io/network': 'edge-net' },
    });
    const name = `${entryName('web', '10.0.5.6')}-edge-net`;
    await waitFor(() => agent.running.supervisor.entryName === `shop/${name}`, 'registered');
    expect((await bed.entry(name))?.we.spec.network).toBe('edge-net');
    await agent.stop();
  });
});
