import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { captureCli } from '../fixtures/cli-run.ts';

/**
 * A template rollout end to end: the local runtime (gateway, handlers, dynalite, the rollout
 * function on its timer), real agents connected over WebSockets, and the operator's CLI.
 * Changing the group's template with `registrar apply` reaches every running VM's entry
 * without any agent reconnecting; `registrar rollout` shows and pauses it; `get wg` counts the
 * entries on an older template.
 */
let bed: AgentTestbed | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

const IPS = ['10.3.0.1', '10.3.0.2', '10.3.0.3'];

function group(options: {
  labels: Record<string, string>;
  serviceAccount?: string;
  pace?: string;
}) {
  return [
    'apiVersion: networking.istio.io/v1',
    'kind: WorkloadGroup',
    'metadata:',
    '  name: web',
    `  namespace: ${NAMESPACE}`,
    '  annotations:',
    `    workload-registrar/rollout-pace: "${options.pace ?? '100%/1s'}"`,
    'spec:',
    '  metadata:',
    '    labels:',
    '      app: web',
    '  template:',
    '    ports:',
    '      http: 8080',
    '    labels:',
    ...Object.entries(options.labels).map(([k, v]) => `      ${k}: ${v}`),
    ...(options.serviceAccount ? [`    serviceAccount: ${options.serviceAccount}`] : []),
    '',
  ].join('\n');
}

/** The CLI as an operator runs it beside `npm start`. */
function registrar(testbed: AgentTestbed, args: string[], stdin?: string) {
  const localJson = testbed.runtime.localJsonPath;
  if (localJson === undefined) throw new Error('the runtime wrote no local.json');
  return captureCli(args, {
    env: { REGISTRAR_DATA_DIR: dirname(localJson) },
    ...(stdin ? { stdin } : {}),
  });
}

async function labelsOf(testbed: AgentTestbed, ip: string) {
  return (await testbed.entry(`web-${ip}`))?.we.metadata.labels;
}

/** One run of the rollout function that really ran (a timer tick may hold the lease). */
async function rolloutRun(testbed: AgentTestbed) {
  for (;;) {
    const summary = await testbed.runtime.rolloutNow?.();
    if (summary?.mode === 'ran') return summary;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a template change, applied with the CLI, reaches running VMs', () => {
  it('rolls out to every live entry without reconnecting an agent; the agent label still wins', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true, rolloutIntervalMs: 500 });
    const testbed = bed;
    expect(
      await registrar(testbed, ['apply', '-f', '-'], group({ labels: { version: 'v1' } })),
    ).toMatchObject({
      code: 0,
      stdout: 'workloadgroup.networking.istio.io/web created\n',
    });
    const agents = await Promise.all(
      IPS.map((ip, i) =>
        testbed.agent({ ips: [ip], ...(i === 0 ? { labels: { version: 'canary' } } : {}) }),
      ),
    );
    await waitFor(
      async () =>
        (await Promise.all(IPS.map((ip) => testbed.entry(`web-${ip}`)))).every((e) => e?.connected),
      'three entries',
      15_000,
    );

    const applied = await registrar(
      testbed,
      ['apply', '-f', '-'],
      group({ labels: { version: 'v2', tier: 'front' } }),
    );
    expect(applied).toMatchObject({
      code: 0,
      stderr: '',
      stdout: 'workloadgroup.networking.istio.io/web configured\n',
    });
    const started = Date.now();
    await waitFor(
      async () => (await labelsOf(testbed, IPS[2] as string))?.version === 'v2',
      'the rollout',
      15_000,
    );
    await waitFor(
      async () => (await labelsOf(testbed, IPS[1] as string))?.version === 'v2',
      'all',
      15_000,
    );
    console.info(`template change -> every entry updated in ${Date.now() - started} ms`);
    expect(await labelsOf(testbed, IPS[0] as string)).toEqual({
      app: 'web',
      version: 'canary',
      tier: 'front',
    });
    expect(await labelsOf(testbed, IPS[1] as string)).toEqual({
      app: 'web',
      version: 'v2',
      tier: 'front',
    });
    // Nobody reconnected: no connection closed, one registration each.
    for (const agent of agents) {
      expect(agent.events.filter((e) => e.type === 'closed')).toEqual([]);
      expect(agent.logs.filter((line) => line.includes('registered as'))).toHaveLength(1);
    }

    const status = await registrar(testbed, ['rollout', 'status', 'wg/web', '-n', NAMESPACE]);
    expect(status).toMatchObject({
      code: 0,
      stdout: 'workloadgroup "web" successfully rolled out: 3 of 3 entries on generation 2\n',
    });
    // describe tells why the labels changed: the event the rollout's write carried.
    const described = await registrar(testbed, [
      'describe',
      'we',
      `web-${IPS[1]}`,
      '-n',
      NAMESPACE,
    ]);
    expect(described.stdout).toMatch(
      /Normal\s+TemplateUpdated\s+\S+\s+rollout\s+WorkloadGroup web generation 1 -> 2 applied to the live entry \(labels\)/,
    );
    const get = await registrar(testbed, ['get', 'wg', '-n', NAMESPACE]);
    expect(get.stdout).toMatch(
      /^NAME\s+GENERATION\s+ENTRIES\s+UP-TO-DATE\s+AGE\nweb\s+2\s+3\s+3\s+\S+\n$/,
    );
  });

  it('does not roll out a new service account: apply says so, get wg counts the entries on an older template', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true, rolloutIntervalMs: 3_600_000 });
    const testbed = bed;
    await registrar(testbed, ['apply', '-f', '-'], group({ labels: { version: 'v1' } }));
    await testbed.agent({ ips: ['10.3.1.1'] });
    await waitFor(async () => (await testbed.entry('web-10.3.1.1'))?.connected === true, 'entry');

    const applied = await registrar(
      testbed,
      ['apply', '-f', '-'],
      group({ labels: { version: 'v2' }, serviceAccount: 'web-v2' }),
    );
    expect(applied.code).toBe(0);
    expect(applied.stderr).toBe(
      "warning: workloadgroup shop/web: serviceAccount changed from <none> to 'web-v2'; live entries keep theirs (a running VM's identity and name never change under it) and take the new one when they register again (registrar delete we NAME -n shop closes a VM's connection: it re-registers at once); registrar get wg web -n shop shows how many entries are on an older template\n",
    );
    await rolloutRun(testbed);
    const entry = await testbed.entry('web-10.3.1.1');
    expect(entry?.we.metadata.labels).toEqual({ app: 'web', version: 'v2' });
    expect(entry?.we.spec.serviceAccount).toBeUndefined();
    const get = await registrar(testbed, ['get', 'wg', 'web', '-n', NAMESPACE]);
    expect(get.stdout).toMatch(/\nweb\s+2\s+1\s+0\s+\S+\n$/);
    const status = await registrar(testbed, ['rollout', 'status', 'wg/web', '-n', NAMESPACE]);
    expect(status.stdout).toContain(
      "1 entry keeps an older service account or network (a rollout never changes identity): they take the template's when they register again",
    );
  });
});

describe('registrar rollout pause and resume', () => {
  it('holds a template change back until resumed', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true, rolloutIntervalMs: 3_600_000 });
    const testbed = bed;
    await registrar(testbed, ['apply', '-f', '-'], group({ labels: { version: 'v1' } }));
    await testbed.agent({ ips: ['10.3.2.1'] });
    await waitFor(async () => (await testbed.entry('web-10.3.2.1'))?.connected === true, 'entry');

    expect(await registrar(testbed, ['rollout', 'pause', 'wg/web', '-n', NAMESPACE])).toMatchObject(
      {
        code: 0,
        stdout: 'workloadgroup.networking.istio.io/web paused\n',
      },
    );
    expect(
      await registrar(testbed, ['rollout', 'pause', 'wg', 'web', '-n', NAMESPACE]),
    ).toMatchObject({
      code: 1,
      stderr: 'error: workloadgroups "web" is already paused\n',
    });
    await registrar(testbed, ['apply', '-f', '-'], group({ labels: { version: 'v2' } }));
    await rolloutRun(testbed);
    expect(await labelsOf(testbed, '10.3.2.1')).toEqual({ app: 'web', version: 'v1' });
    const paused = await registrar(testbed, ['rollout', 'status', 'wg/web', '-n', NAMESPACE]);
    expect(paused.stdout).toBe(
      'rollout of workloadgroup "web" to generation 2 is paused: 0 of 1 entry updated; resume with registrar rollout resume wg/web -n shop\n',
    );
    const json = JSON.parse(
      (await registrar(testbed, ['rollout', 'status', 'wg/web', '-n', NAMESPACE, '-o', 'json']))
        .stdout,
    );
    expect(json).toMatchObject({
      state: 'paused',
      entries: 1,
      updated: 0,
      pending: 1,
      paused: true,
    });

    expect(
      await registrar(testbed, ['rollout', 'resume', 'wg/web', '-n', NAMESPACE]),
    ).toMatchObject({
      code: 0,
      stdout: 'workloadgroup.networking.istio.io/web resumed\n',
    });
    await rolloutRun(testbed);
    expect(await labelsOf(testbed, '10.3.2.1')).toEqual({ app: 'web', version: 'v2' });
  });

  it('refuses what is not one group, and a group that does not exist', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true, rolloutIntervalMs: 3_600_000 });
    const testbed = bed;
    expect(await registrar(testbed, ['rollout', 'status', 'we/web-10.0.0.1'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('name one workloadgroup: wg/NAME'),
    });
    expect(
      await registrar(testbed, ['rollout', 'pause', 'wg/nope', '-n', NAMESPACE]),
    ).toMatchObject({
      code: 1,
      stderr: 'error: workloadgroups "nope" not found in namespace "shop"\n',
    });
  });

  it('refuses a pace annotation it cannot read, writing nothing', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true, rolloutIntervalMs: 3_600_000 });
    const testbed = bed;
    const run = await registrar(
      testbed,
      ['apply', '-f', '-'],
      group({ labels: { version: 'v1' }, pace: 'fast' }),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      "error: document 1 (WorkloadGroup web): metadata.annotations.workload-registrar/rollout-pace: invalid value 'fast': write <entries>/<interval> or <percent>%/<interval>, such as 500/30s or 25%/10s\nnothing was written\n",
    );
    expect(await testbed.registry.getGroup({ namespace: NAMESPACE, name: 'web' })).toBeUndefined();
  });
});
