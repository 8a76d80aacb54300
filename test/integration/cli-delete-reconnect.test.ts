import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import { type AgentTiming, DEFAULT_TIMING } from '../../agent/config.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  NAMESPACE,
  startAgentTestbed,
  type TestAgent,
} from '../fixtures/agent-testbed.ts';
import { captureCli } from '../fixtures/cli-run.ts';

/**
 * `registrar delete` against the real local runtime with real agents: deleting an entry, or its
 * group, closes the connections that held it (`DELETE @connections/{id}`), so agents notice at
 * once instead of at their next rotation (up to 2 h), and come back by themselves.
 */
let bed: AgentTestbed | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

/** The agent's reconnect and refusal timings as shipped (the testbed's are shortened). */
const SHIPPED_BACKOFF: Partial<AgentTiming> = {
  backoffBaseMs: DEFAULT_TIMING.backoffBaseMs,
  backoffCapMs: DEFAULT_TIMING.backoffCapMs,
  refusalBackoffMs: DEFAULT_TIMING.refusalBackoffMs,
  refusalBackoffCapMs: DEFAULT_TIMING.refusalBackoffCapMs,
  missingGroupRetryMs: DEFAULT_TIMING.missingGroupRetryMs,
};

/** The CLI as an operator runs it beside `npm start`: it finds the registrar in local.json. */
function registrar(testbed: AgentTestbed, args: string[]) {
  const localJson = testbed.runtime.localJsonPath;
  if (localJson === undefined) throw new Error('the runtime wrote no local.json');
  return captureCli(args, { env: { REGISTRAR_DATA_DIR: dirname(localJson) } });
}

const registeredLines = (agent: TestAgent) =>
  agent.logs.filter((line) => line.includes('registered as'));

async function createdAt(testbed: AgentTestbed, name: string): Promise<string | undefined> {
  return (await testbed.entry(name))?.we.metadata.creationTimestamp;
}

describe('registrar delete we of a connected entry', () => {
  it('closes the connection that held it, and the agent registers a fresh entry within seconds', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true });
    const testbed = bed;
    await testbed.applyGroup('web');
    const agent = await testbed.agent({ timingOverrides: SHIPPED_BACKOFF });
    await waitFor(async () => (await testbed.entry('web-10.0.0.7'))?.connected === true, 'entry');
    await waitFor(async () => registeredLines(agent).length === 1, 'registered');
    const before = await createdAt(testbed, 'web-10.0.0.7');
    expect(before).toBeDefined();

    const started = Date.now();
    const run = await registrar(testbed, ['delete', 'we', 'web-10.0.0.7', '-n', NAMESPACE]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toBe(
      'workloadentry.networking.istio.io "web-10.0.0.7" deleted\n' +
        "closed 1 connection that held it: its agent reconnects and registers again from the group's current template\n",
    );

    await waitFor(
      async () => (await testbed.entry('web-10.0.0.7'))?.connected === true,
      'the agent to register again',
      10_000,
    );
    const back = Date.now() - started;
    // A fresh entry, not the deleted one brought back.
    expect(await createdAt(testbed, 'web-10.0.0.7')).not.toBe(before);
    // The registrar closed it with 1000 (as API Gateway does), and nobody restarted the agent.
    expect(agent.events.filter((e) => e.type === 'closed')).toEqual([
      expect.objectContaining({ code: 1000 }),
    ]);
    await waitFor(async () => registeredLines(agent).length === 2, 're-registered line');
    expect(JSON.parse(registeredLines(agent)[1] ?? '{}')).toMatchObject({
      msg: 're-registered as shop/web-10.0.0.7 after a reconnect',
      connection: 2,
      connectionId: expect.any(String),
    });
    console.info(`delete we -> registered again in ${back} ms`);
    expect(back).toBeLessThan(5_000);
  });

  it('still deletes without a management endpoint, and warns that the agent will not notice', async () => {
    bed = await startAgentTestbed();
    const testbed = bed;
    await testbed.applyGroup('web');
    const agent = await testbed.agent({});
    await waitFor(async () => (await testbed.entry('web-10.0.0.7'))?.connected === true, 'entry');

    // A table named by the environment, as on AWS without REGISTRAR_CONNECTIONS_URL.
    const run = await testbed.cli(['delete', 'we', 'web-10.0.0.7', '-n', NAMESPACE]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('workloadentry.networking.istio.io "web-10.0.0.7" deleted\n');
    expect(run.stderr).toBe(
      'warning: 1 connection of the deleted entry was not closed: its agent will not notice until it reconnects (up to 2 h); ' +
        'pass --management-endpoint <url> (the stack output ManagementEndpoint) or set REGISTRAR_CONNECTIONS_URL\n',
    );
    expect(await testbed.entry('web-10.0.0.7')).toBeUndefined();
    expect(agent.events.filter((e) => e.type === 'closed')).toEqual([]);
  });

  it('refuses a management endpoint that is not a URL before deleting anything', async () => {
    bed = await startAgentTestbed();
    const testbed = bed;
    await testbed.applyGroup('web');
    await testbed.agent({});
    await waitFor(async () => (await testbed.entry('web-10.0.0.7'))?.connected === true, 'entry');
    const run = await testbed.cli([
      'delete',
      'we',
      'web-10.0.0.7',
      '-n',
      NAMESPACE,
      '--management-endpoint',
      'abc123.execute-api',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      "invalid --management-endpoint 'abc123.execute-api': must be a URL",
    );
    expect((await testbed.entry('web-10.0.0.7'))?.connected).toBe(true);
  });
});

describe('an accidental registrar delete wg', () => {
  const IPS = ['10.0.9.1', '10.0.9.2', '10.0.9.3', '10.0.9.4', '10.0.9.5'];

  it('recovers by itself: every VM is back within 30 s of the group being re-applied, no agent restarted', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true });
    const testbed = bed;
    await testbed.applyGroup('web');
    const agents = await Promise.all(
      IPS.map((ip) => testbed.agent({ ips: [ip], timingOverrides: SHIPPED_BACKOFF })),
    );
    const allConnected = async () =>
      (await Promise.all(IPS.map((ip) => testbed.entry(`web-${ip}`)))).every((e) => e?.connected);
    await waitFor(allConnected, 'five entries', 15_000);

    const run = await registrar(testbed, ['delete', 'wg', 'web', '-n', NAMESPACE]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain(
      'closed 5 connections that held them: their agents register again once workloadgroup.networking.istio.io "web" is applied again\n',
    );
    // Each agent noticed, reconnected and was refused: the group is missing.
    const refused = (agent: TestAgent) =>
      agent.events.filter((e) => e.type === 'retry-scheduled' && e.refused).length;
    await waitFor(
      async () => agents.every((agent) => refused(agent) >= 2),
      'two refusals each',
      20_000,
    );
    for (const ip of IPS) expect(await testbed.entry(`web-${ip}`)).toBeUndefined();

    const reapplied = Date.now();
    await testbed.applyGroup('web');
    await waitFor(allConnected, 'all five back', 30_000);
    const back = Date.now() - reapplied;
    console.info(`delete wg, re-apply -> all 5 VMs back in ${back} ms`);
    expect(back).toBeLessThan(30_000);
    for (const agent of agents) {
      // The same agent, never restarted: one start, then reconnects.
      expect(
        agent.events.filter((e) => e.type === 'connecting' && e.kind === 'start'),
      ).toHaveLength(1);
      await waitFor(
        async () => registeredLines(agent).some((line) => line.includes('re-registered as')),
        're-registered line',
      );
    }
  });

  it('with --cascade=orphan keeps the entries and their connections', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true });
    const testbed = bed;
    await testbed.applyGroup('web');
    const agent = await testbed.agent({ ips: ['10.0.9.9'] });
    await waitFor(async () => (await testbed.entry('web-10.0.9.9'))?.connected === true, 'entry');

    const run = await registrar(testbed, [
      'delete',
      'wg',
      'web',
      '-n',
      NAMESPACE,
      '--cascade=orphan',
    ]);
    expect(run).toMatchObject({
      code: 0,
      stdout: 'workloadgroup.networking.istio.io "web" deleted\n',
      stderr: '',
    });
    const record = await testbed.registry.getEntry({ namespace: NAMESPACE, name: 'web-10.0.9.9' });
    const [holder] = record?.connection?.connectionIds ?? [];
    // The gateway still has the connection open (GET @connections answers 410 once closed).
    const url = `${testbed.runtime.managementUrl}/@connections/${encodeURIComponent(String(holder))}`;
    expect((await fetch(url)).status).toBe(200);
    expect(agent.events.filter((e) => e.type === 'closed')).toEqual([]);
  });
});
