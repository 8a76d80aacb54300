import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { RELEASE } from '../../lib/release.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import { killAll, previousTree, startAgent } from '../fixtures/release-fleet.ts';

/**
 * The agent of the previous release (its own bin/registrar-agent.js, from CHANGELOG.md's commit)
 * against this registrar with the skew floor just above it: the refusal it logs must name both
 * versions, also when that agent predates the policy and sends no version (0.1).
 */
let bed: AgentTestbed;
let previous: Awaited<ReturnType<typeof previousTree>>;
beforeAll(async () => {
  previous = await previousTree();
  const [major = 0, minor = 0] = previous.version.split('.').map(Number);
  bed = await startAgentTestbed({
    functionEnv: {
      REGISTRAR_GROUP_CACHE_TTL: '0s',
      REGISTRAR_OLDEST_AGENT_VERSION: `${major}.${minor + 1}`,
    },
  });
  await bed.applyGroup('web');
});
afterAll(async () => {
  await killAll();
  await bed?.close();
});

describe.skipIf(testBackend() === 'dynamodb-local')('an agent older than the skew policy', () => {
  it('logs a refusal naming its version and the registrar’s, and registers nothing', async () => {
    const agent = startAgent(previous, 'old', {
      url: bed.runtime.url,
      group: 'web',
      namespace: NAMESPACE,
      ip: '10.0.8.1',
      token: bed.token,
    });
    await waitFor(() => agent.output().includes('426'), 'the refusal in its log', 30_000);
    const line =
      agent
        .output()
        .split('\n')
        .find((text) => text.includes('426')) ?? '';
    const [major = 0, minor = 0] = previous.version.split('.').map(Number);
    // A 0.1 agent sends no version; later ones send their own.
    const shown = previous.version.startsWith('0.1.')
      ? '0.1.x (it sent no version)'
      : previous.version;
    expect(line).toContain(
      `agent version ${shown} is too old for registrar ${RELEASE}, which accepts agents ${major}.${minor + 1} to ${major}.x`,
    );
    expect(await bed.entry('web-10.0.8.1')).toBeUndefined();
    await agent.stop();
  }, 120_000);
});
