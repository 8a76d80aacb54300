import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  type HttpTarget,
  startHttpTarget,
  startTcpTarget,
  waitFor,
} from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  entryName,
  startAgentTestbed,
  type TestAgent,
} from '../fixtures/agent-testbed.ts';

/**
 * The agent against the real local runtime (gateway, handlers, dynalite), with real HTTP and
 * TCP servers as probe targets. Probe seconds are scaled to tenths (FAST_TIMING).
 */
let bed: AgentTestbed;

beforeAll(async () => {
  bed = await startAgentTestbed();
});
afterAll(() => bed?.close());

/** Polls the entry until `healthy` is `want`, recording every distinct status seen. */
async function until(name: string, want: string, seen: string[]): Promise<void> {
  await waitFor(
    async () => {
      const healthy = (await bed.entry(name))?.healthy ?? 'none';
      if (seen.at(-1) !== healthy) seen.push(healthy);
      return healthy === want;
    },
    `${name} Healthy=${want}`,
    15_000,
  );
}

const healthSent = (agent: TestAgent) =>
  agent.events
    .filter((e) => e.type === 'health-sent')
    .map((e) => (e as { healthy: boolean }).healthy);

describe('agent against the local runtime', () => {
  it('registers and shows up in registrar get we', async () => {
    await bed.applyGroup('plain');
    const agent = await bed.agent({ group: 'plain', ips: ['10.0.0.1'] });
    await waitFor(() => agent.running.supervisor.entryName, 'registration');
    expect(agent.running.supervisor.entryName).toBe(`shop/${entryName('plain', '10.0.0.1')}`);
    const { code, stdout } = await bed.cli(['get', 'we', '-n', 'shop']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/plain-10\.0\.0\.1\s+10\.0\.0\.1\s+True\s+<none>/);
    expect(
      agent.logs.some((line) => line.includes('"msg":"registered as shop/plain-10.0.0.1"')),
    ).toBe(true);
    await agent.stop();
  });

  it('sends no health when the group has no probe', async () => {
    await bed.applyGroup('noprobe');
    const agent = await bed.agent({ group: 'noprobe', ips: ['10.0.0.2'] });
    await waitFor(() => agent.running.supervisor.entryName, 'registration');
    await waitFor(
      () => agent.logs.some((line) => line.includes('the group has no probe')),
      'no-probe log',
    );
    expect(healthSent(agent)).toEqual([]);
    expect((await bed.entry('noprobe-10.0.0.2'))?.healthy).toBeUndefined();
    await agent.stop();
  });

  describe('httpGet', () => {
    let target: HttpTarget;
    beforeAll(async () => {
      target = await startHttpTarget(200);
    });
    afterAll(() => target.close());

    it('a target flipping 200, 500, 200 gives exactly healthy, unhealthy, healthy with thresholds 1/1', async () => {
      await bed.applyGroup('flip', {
        httpGet: { port: target.port, path: '/ready' },
        periodSeconds: 1,
        successThreshold: 1,
        failureThreshold: 1,
      });
      const agent = await bed.agent({ group: 'flip', ips: ['10.0.0.3'] });
      const seen: string[] = [];
      await until('flip-10.0.0.3', 'True', seen);
      target.status = 500;
      await until('flip-10.0.0.3', 'False', seen);
      const unhealthy = (await bed.entry('flip-10.0.0.3'))?.we.status?.conditions?.[0];
      expect(unhealthy?.message).toBe(
        `HTTP probe of http://localhost:${target.port}/ready failed with status code 500`,
      );
      target.status = 200;
      await until('flip-10.0.0.3', 'True', seen);
      expect(seen.filter((s) => s !== 'none')).toEqual(['True', 'False', 'True']);
      expect(healthSent(agent)).toEqual([true, false, true]);
      await agent.stop();
    });

    it('respects thresholds 3/3: short runs of failures or successes change nothing', async () => {
      // Two failures (below 3) are ignored; three flip it; two successes are not enough.
      target.script = [200, 200, 200, 500, 500, 200, 500, 500, 500, 200, 200, 500, 200, 200, 200];
      target.status = 200;
      const before = target.requests;
      await bed.applyGroup('thresholds', {
        httpGet: { port: target.port },
        periodSeconds: 1,
        successThreshold: 3,
        failureThreshold: 3,
      });
      const agent = await bed.agent({ group: 'thresholds', ips: ['10.0.0.4'] });
      await waitFor(
        () => target.requests - before >= 16 && healthSent(agent).length >= 3,
        'the scripted statuses to be probed',
        20_000,
      );
      expect(healthSent(agent)).toEqual([true, false, true]);
      await waitFor(
        async () => (await bed.entry('thresholds-10.0.0.4'))?.healthy === 'True',
        'entry healthy',
      );
      await agent.stop();
    });
  });

  it('a TCP target opened and closed gives healthy, unhealthy, healthy', async () => {
    const tcp = await startTcpTarget();
    try {
      await bed.applyGroup('tcp', {
        tcpSocket: { port: tcp.port, host: '127.0.0.1' },
        periodSeconds: 1,
        failureThreshold: 1,
      });
      const agent = await bed.agent({ group: 'tcp', ips: ['10.0.0.5'] });
      const seen: string[] = [];
      await until('tcp-10.0.0.5', 'True', seen);
      await tcp.close();
      await until('tcp-10.0.0.5', 'False', seen);
      await tcp.open();
      await until('tcp-10.0.0.5', 'True', seen);
      expect(healthSent(agent)).toEqual([true, false, true]);
      await agent.stop();
    } finally {
      await tcp.close();
    }
  });

  // A group editor writes the command; the agent here runs as root (the test runner), so the
  // probe must run as the probe user (nobody), not as root.
  it.skipIf(process.geteuid?.() !== 0)(
    'an exec probe from the group never runs as root (skipped unless the agent runs as root)',
    async () => {
      await bed.applyGroup('who', {
        exec: { command: ['sh', '-c', '[ "$(id -u)" != 0 ] || { echo ran as root; exit 1; }'] },
        periodSeconds: 1,
        failureThreshold: 1,
      });
      const agent = await bed.agent({ group: 'who', ips: ['10.0.0.8'] });
      await waitFor(
        async () => (await bed.entry('who-10.0.0.8'))?.healthy !== undefined,
        'a health report',
      );
      const entry = await bed.entry('who-10.0.0.8');
      expect(entry?.we.status?.conditions?.[0]?.message).toBeUndefined();
      expect(entry?.healthy).toBe('True');
      await agent.stop();
    },
  );

  it('an exec probe that runs past its timeout is unhealthy', async () => {
    await bed.applyGroup('slow', {
      exec: { command: ['sleep', '5'] },
      periodSeconds: 2,
      timeoutSeconds: 2,
      failureThreshold: 1,
    });
    const agent = await bed.agent({ group: 'slow', ips: ['10.0.0.6'] });
    await waitFor(
      async () => (await bed.entry('slow-10.0.0.6'))?.healthy === 'False',
      'entry unhealthy',
    );
    const condition = (await bed.entry('slow-10.0.0.6'))?.we.status?.conditions?.[0];
    expect(condition?.message).toBe('exec probe sleep timed out after 0.2s');
    await agent.stop();
  });
});
