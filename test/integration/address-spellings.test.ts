import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * The attacker holds a token for `shop` and registers the instance metadata service under a
 * spelling the mesh or a NAT64 gateway would still deliver to it, hoping traffic for its
 * Service goes there (and the answer, credentials included, back to whoever calls it). Real
 * agents on the local runtime; the agent itself accepts any IP its operator gives.
 */
let bed: AgentTestbed;

beforeAll(async () => {
  bed = await startAgentTestbed();
  await bed.applyGroup('web');
});
afterAll(() => bed?.close());

describe('an agent registering the metadata service under another spelling', () => {
  it.each([
    [
      'fd00:ec2::254',
      'in fd00:ec2::/64, where EC2 serves each instance the instance metadata service',
    ],
    ['::ffff:a9fe:a9fe', 'a link-local address (the instance metadata service)'],
    ['64:ff9b::a9fe:a9fe', 'the NAT64 form of 169.254.169.254'],
    ['::169.254.169.254', 'the IPv4-compatible form of 169.254.169.254'],
  ])('is refused 400 for %s, and nothing is written', async (ip, problem) => {
    const agent = await bed.agent({
      ips: [ip],
      timingOverrides: { refusalBackoffMs: 5_000, refusalBackoffCapMs: 5_000 },
    });
    await waitFor(() => agent.events.some((e) => e.type === 'retry-scheduled'), 'a refusal');
    await agent.stop();
    const refusal = agent.logs
      .map((line) => JSON.parse(line) as { msg: string; status?: number })
      .find((line) => line.status !== undefined);
    expect(refusal?.status).toBe(400);
    expect(refusal?.msg).toContain(`invalid ip '${ip}': is ${problem}`);
    expect(await bed.registry.listEntries(NAMESPACE)).toEqual([]);
  });
});
