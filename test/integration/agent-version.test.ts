import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AGENT_VERSION } from '../../agent/version.ts';
import { RELEASE } from '../../lib/release.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { openClient, refusedUpgrade } from '../fixtures/websocket-client.ts';

/**
 * The agent's version through the real local runtime: sent on connect, recorded on the entry,
 * shown by the CLI; and the skew policy refusing an agent outside it, with both versions in
 * what the agent logs. A raw WebSocket client without `agentVersion` plays a 0.1 agent.
 */
const connectUrl = (bed: AgentTestbed, ip: string, extra = '') =>
  `${bed.runtime.url}?group=web&namespace=${NAMESPACE}&ip=${ip}${extra}`;

describe('agent versions under the default policy', () => {
  let bed: AgentTestbed;
  beforeAll(async () => {
    bed = await startAgentTestbed();
    await bed.applyGroup('web');
  });
  afterAll(() => bed?.close());

  it('records the version each agent sends, and 0.1.x for one that sends none', async () => {
    const agent = await bed.agent({ ips: ['10.0.5.1'] });
    await waitFor(() => agent.running.supervisor.entryName, 'registered');
    const old = await openClient(connectUrl(bed, '10.0.5.2'), {
      Authorization: `Bearer ${bed.token}`,
    });
    try {
      const entry = (ip: string) =>
        bed.registry.getEntry({ namespace: NAMESPACE, name: `web-${ip}` });
      expect((await entry('10.0.5.1'))?.agentVersion).toBe(AGENT_VERSION);
      expect((await entry('10.0.5.2'))?.agentVersion).toBe('0.1.x');

      const wide = await bed.cli(['get', 'we', '-n', NAMESPACE, '-o', 'wide']);
      expect(wide.stdout.split('\n')[0]).toMatch(/\sIDENTITY\s+AGENT$/);
      expect(wide.stdout).toMatch(new RegExp(`^web-10\\.0\\.5\\.1\\s.*\\s${AGENT_VERSION}$`, 'm'));
      expect(wide.stdout).toMatch(/^web-10\.0\.5\.2\s.*\s0\.1\.x$/m);
      const described = await bed.cli(['describe', 'we', 'web-10.0.5.1', '-n', NAMESPACE]);
      expect(described.stdout).toMatch(new RegExp(`Agent Version:\\s+${AGENT_VERSION}\\n`));

      const summary = await bed.cli(['get', 'agents', '-n', NAMESPACE, '-o', 'json']);
      expect(JSON.parse(summary.stdout).items).toEqual(
        expect.arrayContaining([
          { namespace: NAMESPACE, agentVersion: '0.1.x', entries: 1, connected: 1 },
          { namespace: NAMESPACE, agentVersion: AGENT_VERSION, entries: 1, connected: 1 },
        ]),
      );
    } finally {
      await old.close();
      await agent.stop();
    }
  });

  it('refuses a version that is not a semantic version with 400, naming the field, writing nothing', async () => {
    const refusal = await refusedUpgrade(connectUrl(bed, '10.0.5.3', '&agentVersion=latest'), {
      Authorization: `Bearer ${bed.token}`,
    });
    expect(refusal.statusCode).toBe(400);
    expect(JSON.parse(refusal.body).error.message).toBe(
      "invalid agentVersion 'latest': must be a semantic version such as 0.2.0 (at most 64 characters)",
    );
    expect(await bed.entry('web-10.0.5.3')).toBeUndefined();
  });
});

describe('an agent outside the skew policy', () => {
  let bed: AgentTestbed;
  beforeAll(async () => {
    // The floor above this release: every agent there is (this one included) is too old.
    bed = await startAgentTestbed({
      functionEnv: { REGISTRAR_GROUP_CACHE_TTL: '0s', REGISTRAR_OLDEST_AGENT_VERSION: '0.99' },
    });
    await bed.applyGroup('web');
  });
  afterAll(() => bed?.close());

  it('is refused 426 with both versions in what the agent logs, and registers nothing', async () => {
    const agent = await bed.agent({ ips: ['10.0.6.1'] });
    try {
      const line = await waitFor(
        () => agent.logs.find((text) => text.includes('refused (426')),
        'the refusal',
      );
      expect(JSON.parse(line).msg).toMatch(
        new RegExp(
          `^refused \\(426 UnsupportedAgentVersion\\): agent version ${literal(AGENT_VERSION)} is too old for registrar ${literal(RELEASE)}, which accepts agents 0\\.99 to 0\\.x .*upgrade the agent`,
        ),
      );
      expect(agent.events.find((e) => e.type === 'retry-scheduled')).toMatchObject({
        refused: true,
      });
      expect(await bed.entry('web-10.0.6.1')).toBeUndefined();
    } finally {
      await agent.stop();
    }
  });

  it('refuses an agent that sends no version as the 0.1 agent it is', async () => {
    const refusal = await refusedUpgrade(connectUrl(bed, '10.0.6.2'), {
      Authorization: `Bearer ${bed.token}`,
    });
    expect(refusal.statusCode).toBe(426);
    expect(JSON.parse(refusal.body).error).toEqual({
      code: 'UnsupportedAgentVersion',
      message: `agent version 0.1.x (it sent no version) is too old for registrar ${RELEASE}, which accepts agents 0.99 to 0.x (its minor release and the 2 before it); upgrade the agent (docs/operations.md, version skew)`,
    });
    expect(await bed.entry('web-10.0.6.2')).toBeUndefined();
  });

  it('accepts an agent at the floor', async () => {
    const client = await openClient(connectUrl(bed, '10.0.6.3', '&agentVersion=0.99.0'), {
      Authorization: `Bearer ${bed.token}`,
    });
    try {
      expect(
        (await bed.registry.getEntry({ namespace: NAMESPACE, name: 'web-10.0.6.3' }))?.agentVersion,
      ).toBe('0.99.0');
    } finally {
      await client.close();
    }
  });
});

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
