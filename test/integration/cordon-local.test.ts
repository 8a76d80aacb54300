import { afterEach, describe, expect, it } from 'vitest';

import { type HttpTarget, startHttpTarget, waitFor } from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  NAMESPACE,
  startAgentTestbed,
  type TestAgent,
} from '../fixtures/agent-testbed.ts';
import { registrarBeside } from '../fixtures/local-cli.ts';

/**
 * `registrar cordon` and `uncordon` against the real local runtime (gateway, handlers,
 * dynalite) with real agents and the real CLI: the entry leaves traffic without its VM
 * disconnecting, stays out across the agent's health reports and reconnects (a new agent
 * process learns it from `describe`), the agents are told through `POST @connections` and log
 * it, and a bulk cordon is paced and reported.
 */
let bed: AgentTestbed | undefined;
let target: HttpTarget | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
  await target?.close();
  target = undefined;
});

const registrar = registrarBeside;

const logged = (agent: TestAgent, words: string) =>
  agent.logs.filter((line) => line.includes(words));

async function healthyColumn(testbed: AgentTestbed, name: string): Promise<string | undefined> {
  const run = await registrar(testbed, ['get', 'we', name, '-n', NAMESPACE]);
  const row = run.stdout.split('\n')[1] ?? '';
  // HEALTHY, then ROUTABLE, GROUP and AGE.
  return /\s(True|False \(Maintenance\)|False|<none>)\s+(?:True|False)\s+\S+\s+\S+$/.exec(row)?.[1];
}

/** The agent's own verdict, kept beside the cordon. */
async function probeSays(testbed: AgentTestbed, name: string): Promise<string | undefined> {
  return (await testbed.registry.getEntry({ namespace: NAMESPACE, name }))?.health?.status;
}

describe('registrar cordon we', () => {
  it('keeps a connected VM out of traffic across health reports and a new agent, until uncordon', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true });
    const testbed = bed;
    const probe = await startHttpTarget(200);
    target = probe;
    await testbed.applyGroup('web', {
      httpGet: { port: probe.port, path: '/ready' },
      periodSeconds: 1,
      successThreshold: 1,
      failureThreshold: 1,
    });
    const first = await testbed.agent({});
    const name = 'web-10.0.0.7';
    await waitFor(async () => (await testbed.entry(name))?.healthy === 'True', 'healthy', 15_000);

    const cordon = await registrar(testbed, [
      'cordon',
      'we',
      name,
      '-n',
      NAMESPACE,
      '--message',
      'INC-42: bad disk',
    ]);
    expect(cordon).toEqual({
      code: 0,
      stdout: `workloadentry.networking.istio.io/${name} cordoned\n`,
      stderr: '',
    });
    expect(await healthyColumn(testbed, name)).toBe('False (Maintenance)');
    expect((await testbed.entry(name))?.connected).toBe(true);
    await waitFor(
      () => logged(first, 'cordoned by an operator').length === 1,
      'the agent to log the cordon',
    );
    expect(logged(first, 'cordoned by an operator')[0]).toContain('INC-42: bad disk');

    // The probe fails and recovers: the agent reports both, the entry stays out of traffic.
    probe.status = 500;
    await waitFor(
      async () => (await probeSays(testbed, name)) === 'False',
      'the unhealthy report',
      15_000,
    );
    probe.status = 200;
    await waitFor(
      async () => (await probeSays(testbed, name)) === 'True',
      'the healthy report',
      15_000,
    );
    expect(await healthyColumn(testbed, name)).toBe('False (Maintenance)');

    // A new agent process (a restart): it is told on registration, and its reports change nothing.
    await first.stop();
    const second = await testbed.agent({});
    await waitFor(
      () => logged(second, 'cordoned by an operator').length === 1,
      'the new agent to learn the cordon',
      15_000,
    );
    await waitFor(
      async () => (await probeSays(testbed, name)) === 'True',
      'the new agent’s report',
      15_000,
    );
    expect(await healthyColumn(testbed, name)).toBe('False (Maintenance)');
    const described = await registrar(testbed, ['describe', 'we', name, '-n', NAMESPACE]);
    expect(described.stdout).toMatch(
      /^Maintenance: +cordoned .*: INC-42: bad disk \(out of traffic until: registrar uncordon we web-10\.0\.0\.7 -n shop\)$/m,
    );
    expect(described.stdout).toMatch(
      /^ {2}Warning +Cordoned +\S+ +operator +taken out of traffic \(Healthy False, Maintenance\): INC-42: bad disk$/m,
    );

    const uncordon = await registrar(testbed, ['uncordon', 'we', name, '-n', NAMESPACE]);
    expect(uncordon).toMatchObject({
      code: 0,
      stdout: `workloadentry.networking.istio.io/${name} uncordoned\n`,
    });
    expect(await healthyColumn(testbed, name)).toBe('True');
    await waitFor(
      () => logged(second, 'uncordoned by an operator').length === 1,
      'the agent to log the uncordon',
    );

    const events = await registrar(testbed, [
      'get',
      'events',
      '-n',
      NAMESPACE,
      '--for',
      `we/${name}`,
    ]);
    const reasons = events.stdout
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((line) => line.split(/\s{2,}/)[2]);
    expect(reasons).toEqual([
      'Registered',
      'Healthy',
      'Cordoned',
      'Unhealthy',
      'Healthy',
      // stop(), not a drain: the agent closed cleanly.
      'Disconnected',
      'Reconnected',
      'Uncordoned',
    ]);
  });
});

describe('registrar cordon wg and -l: many entries at once', () => {
  const IPS = ['10.0.3.1', '10.0.3.2', '10.0.3.3', '10.0.3.4'];

  it('cordons every entry of a group, paced, says how many, and each agent logs it', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true });
    const testbed = bed;
    await testbed.applyGroup('pool');
    const agents = await Promise.all(IPS.map((ip) => testbed.agent({ group: 'pool', ips: [ip] })));
    await waitFor(
      async () =>
        (await Promise.all(IPS.map((ip) => testbed.entry(`pool-${ip}`)))).every(
          (e) => e?.connected,
        ),
      'four entries',
      15_000,
    );
    // Registered as far as the agents know (describe answered): a push now reaches a logger.
    await waitFor(
      () => agents.every((a) => a.running.supervisor.entryName !== undefined),
      'registered',
    );

    const run = await registrar(testbed, ['cordon', 'wg', 'pool', '-n', NAMESPACE, '--rate', '10']);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines.slice(0, 4).sort()).toEqual(
      IPS.map((ip) => `workloadentry.networking.istio.io/pool-${ip} cordoned`),
    );
    expect(lines[4]).toBe('cordoned 4 of 4 entries (0 already cordoned, 0 failed); 4 agents told');
    for (const agent of agents) {
      await waitFor(
        () => logged(agent, 'cordoned by an operator').length === 1,
        'every agent to log it',
      );
    }

    const again = await registrar(testbed, ['cordon', 'we', '-l', 'app=pool', '-n', NAMESPACE]);
    expect(again.stdout.split('\n').filter(Boolean).at(-1)).toBe(
      'cordoned 0 of 4 entries (4 already cordoned, 0 failed); 0 agents told',
    );
    expect(again.stdout).toContain(`pool-${IPS[0]} already cordoned`);

    // Refusals change nothing: a missing entry among named ones, no target, a bad flag.
    const missing = await registrar(testbed, [
      'uncordon',
      'we',
      `pool-${IPS[0]}`,
      'nosuch',
      '-n',
      NAMESPACE,
    ]);
    expect(missing).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: workloadentries "nosuch" not found in namespace "shop"\n',
    });
    expect(await healthyColumn(testbed, `pool-${IPS[0]}`)).toBe('False (Maintenance)');
    const unnamed = await registrar(testbed, ['cordon', 'we', '-n', NAMESPACE]);
    expect(unnamed.code).toBe(2);
    expect(unnamed.stderr).toContain(
      'name the entries to cordon (registrar cordon we NAME), or select them with -l',
    );
    const rate = await registrar(testbed, ['cordon', 'wg', 'pool', '-n', NAMESPACE, '--rate', '0']);
    expect(rate.code).toBe(2);
    expect(rate.stderr).toContain("option '--rate <per-second>' argument '0' is invalid");
    const empty = await registrar(testbed, [
      'cordon',
      'wg',
      'pool',
      '-n',
      NAMESPACE,
      '--message',
      ' ',
    ]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('--message is empty');
    const dry = await registrar(testbed, ['uncordon', 'wg', 'pool', '-n', NAMESPACE, '--dry-run']);
    expect(dry.stdout).toContain(`pool-${IPS[0]} uncordoned (dry run)`);
    expect(await healthyColumn(testbed, `pool-${IPS[0]}`)).toBe('False (Maintenance)');

    const back = await registrar(testbed, ['uncordon', 'wg', 'pool', '-n', NAMESPACE]);
    expect(back.stdout.split('\n').filter(Boolean).at(-1)).toBe(
      'uncordoned 4 of 4 entries (0 already uncordoned, 0 failed); 4 agents told',
    );
    for (const ip of IPS) expect(await healthyColumn(testbed, `pool-${ip}`)).toBe('<none>');
  });

  it('still cordons without a management endpoint, and says the agents were not told', async () => {
    bed = await startAgentTestbed();
    const testbed = bed;
    await testbed.applyGroup('web');
    await testbed.agent({});
    await waitFor(async () => (await testbed.entry('web-10.0.0.7'))?.connected === true, 'entry');
    const run = await testbed.cli(['cordon', 'we', 'web-10.0.0.7', '-n', NAMESPACE]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('workloadentry.networking.istio.io/web-10.0.0.7 cordoned\n');
    expect(run.stderr).toContain(
      'warning: 1 agent not told (no management endpoint): they learn it when they reconnect',
    );
    expect((await testbed.entry('web-10.0.0.7'))?.we.status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'Maintenance',
      message: 'cordoned with registrar cordon',
    });
  });
});
