import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
});

import { RELEASE } from '../../lib/release.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import { killAll, previousTree, startAgent } from '../fixtures/release-fleet.ts';

/**
 * The agent of the previous release (its own bin/registrar-agent.js, from CHANGELOG.md's commit)
 * against this registrar with the skew floor above it: the refusal it logs must name both
 * versions, though that agent predates the policy and sends no version.
 */
let bed: AgentTestbed;
beforeAll(async () => {
  bed = await startAgentTestbed({
    functionEnv: { REGISTRAR_GROUP_CACHE_TTL: '0s', REGISTRAR_OLDEST_AGENT_VERSION: '0.2' },
  });
  await bed.applyGroup('web');
});
afterAll(async () => {
  await killAll();
  await bed?.close();
});

describe.skipIf(testBackend() === 'dynamodb-local')('an agent older than the skew policy', () => {
  it('logs a refusal naming its version and the registrar’s, and registers nothing', async () => {
    const previous = await previousTree();
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
    expect(line).toContain(
      `agent version 0.1.x (it sent no version) is too old for registrar ${RELEASE}, which accepts agents 0.2 to 0.x`,
    );
    expect(await bed.entry('web-10.0.8.1')).toBeUndefined();
    await agent.stop();
  }, 120_000);
});
