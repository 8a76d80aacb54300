import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { INSTANCE_ID_LABEL } from '../../agent/discovery.ts';
import { INSTANCE_ID_LABEL as REGISTRAR_INSTANCE_ID_LABEL } from '../../lib/auth/instance-identity.ts';
import { type ImdsStandIn, startImdsStandIn } from '../fixtures/agent-imds-stand-in.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * The instance ID from IMDS travels as a connect label, and the real local registrar accepts
 * it. IMDS is a local stand-in (these tests do not run on EC2).
 */
let bed: AgentTestbed;
let imds: ImdsStandIn;

beforeAll(async () => {
  bed = await startAgentTestbed();
  await bed.applyGroup('web');
  imds = await startImdsStandIn({
    'instance-id': 'i-0abc123def4567890',
    'local-ipv4': '10.0.6.1',
    'placement/availability-zone': 'eu-west-1b',
    'placement/region': 'eu-west-1',
  });
});
afterAll(async () => {
  await bed?.close();
  await imds?.close();
});

const labelsOf = (url: string) => new URL(url).searchParams.getAll('label');

describe('instance ID label', () => {
  it('is sent on connect when IMDS answered, and the registrar accepts it', async () => {
    // The agent keeps its own copy (the bundle stays small); it must be the registrar's key.
    expect(INSTANCE_ID_LABEL).toBe(REGISTRAR_INSTANCE_ID_LABEL);
    expect(INSTANCE_ID_LABEL).toBe('registrar.io/instance-id');
    const agent = await bed.agent({
      ips: [],
      imds: { enabled: true, url: imds.url, timeoutMs: 1_000 },
      // A configured label of the same key cannot replace what IMDS says.
      labels: { tier: 'front', [INSTANCE_ID_LABEL]: 'i-forged' },
    });
    expect(labelsOf(agent.running.connectUrl)).toEqual([
      'tier=front',
      'registrar.io/instance-id=i-0abc123def4567890',
    ]);
    await waitFor(
      () => agent.running.supervisor.entryName === 'shop/web-10.0.6.1',
      'the agent to register',
    );
    const entry = await bed.entry('web-10.0.6.1');
    expect(entry?.connected).toBe(true);
    expect(entry?.we.spec.labels?.[INSTANCE_ID_LABEL]).toBe('i-0abc123def4567890');
    // Token mode: the registrar takes the label as the entry's instance, for EC2 events.
    const record = await bed.registry.getEntry({ namespace: 'shop', name: 'web-10.0.6.1' });
    expect(record?.instanceId).toBe('i-0abc123def4567890');
    await agent.stop();
  });

  it('is not sent with --no-imds', async () => {
    const agent = await bed.agent({
      ips: ['10.0.6.2'],
      imds: { enabled: false, url: imds.url, timeoutMs: 1_000 },
    });
    expect(labelsOf(agent.running.connectUrl)).toEqual([]);
    await waitFor(
      () => agent.running.supervisor.entryName === 'shop/web-10.0.6.2',
      'the agent to register',
    );
    expect((await bed.entry('web-10.0.6.2'))?.we.spec.labels?.[INSTANCE_ID_LABEL]).toBeUndefined();
    await agent.stop();
  });
});
