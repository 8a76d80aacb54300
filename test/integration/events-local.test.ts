import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';

import { runCli } from '../../cli/main.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { registrarBeside } from '../fixtures/local-cli.ts';

/**
 * "Why did my VM leave the mesh?" against the real local runtime with real agents and the
 * CLI: every way an entry goes (swept after its grace period, its instance terminated, an
 * operator's delete) leaves its events behind, and `registrar get events` tells them, also
 * once the entry is gone; `-w` prints new ones as they happen.
 */
let bed: AgentTestbed | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

const registrar = registrarBeside;

/** `get events` rows as [TYPE, REASON, OBJECT, MESSAGE] (LAST SEEN varies). */
function rows(stdout: string): string[][] {
  return stdout
    .split('\n')
    .slice(1)
    .filter(Boolean)
    .map((line) => line.split(/\s{2,}/).slice(1));
}

describe('registrar get events', () => {
  it('tells why each VM left the mesh after its entry is gone: swept, instance terminated, deleted', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true, gracePeriodMs: 200 });
    const testbed = bed;
    await testbed.applyGroup('web');
    const swept = await testbed.agent({ ips: ['10.0.4.1'] });
    await testbed.agent({
      ips: ['10.0.4.2'],
      labels: { 'registrar.io/instance-id': 'i-0123456789abcdef0' },
    });
    await testbed.agent({ ips: ['10.0.4.3'] });
    const names = ['web-10.0.4.1', 'web-10.0.4.2', 'web-10.0.4.3'];
    await waitFor(
      async () =>
        (await Promise.all(names.map((n) => testbed.entry(n)))).every((e) => e?.connected),
      'three entries',
      15_000,
    );

    // 1: the agent stops cleanly, and the sweeper deletes the entry after the grace period.
    await swept.running.drainAndStop();
    await waitFor(
      async () => (await testbed.entry(names[0] ?? ''))?.connected === false,
      'disconnected',
    );
    await waitFor(async () => {
      await testbed.runtime.sweepNow();
      return (await testbed.entry(names[0] ?? '')) === undefined;
    }, 'the sweep');
    // 2: EC2 says the instance is terminated.
    const ec2 = await registrar(testbed, [
      'ec2-event',
      '--instance-id',
      'i-0123456789abcdef0',
      '--state',
      'terminated',
    ]);
    expect(ec2.code).toBe(0);
    // 3: an operator deletes it.
    expect((await registrar(testbed, ['delete', 'we', names[2] ?? '', '-n', NAMESPACE])).code).toBe(
      0,
    );

    const of = async (name: string) =>
      rows(
        (await registrar(testbed, ['get', 'events', '-n', NAMESPACE, '--for', `we/${name}`]))
          .stdout,
      );
    expect((await of(names[0] ?? '')).map((r) => r.slice(0, 3))).toEqual([
      ['Normal', 'Registered', 'workloadentry/web-10.0.4.1'],
      ['Normal', 'Draining', 'workloadentry/web-10.0.4.1'],
      ['Normal', 'Disconnected', 'workloadentry/web-10.0.4.1'],
      ['Normal', 'Swept', 'workloadentry/web-10.0.4.1'],
    ]);
    expect((await of(names[0] ?? '')).at(-1)?.[3]).toBe(
      'deleted by the sweeper: disconnected (cleanly) for the whole grace period',
    );
    expect((await of(names[1] ?? '')).at(-1)?.slice(1)).toEqual([
      'InstanceGone',
      'workloadentry/web-10.0.4.2',
      'deleted at once: EC2 says instance i-0123456789abcdef0 is shutting down or terminated',
    ]);
    // The delete closed the agent's connection: it registered again, a new entry.
    await waitFor(async () => (await testbed.entry(names[2] ?? ''))?.connected === true, 'back');
    expect((await of(names[2] ?? '')).map((r) => [r[1], r[3]])).toEqual([
      ['Registered', 'created from WorkloadGroup web when its VM first connected'],
      ['Deleted', 'deleted by registrar delete'],
      ['Registered', 'created from WorkloadGroup web when its VM first connected'],
    ]);

    // describe of the gone entry says where its story is.
    const described = await registrar(testbed, ['describe', 'we', names[0] ?? '', '-n', NAMESPACE]);
    expect(described.code).toBe(1);
    expect(described.stderr).toMatch(
      /^error: workloadentries "web-10\.0\.4\.1" not found in namespace "shop"; it was deleted \S+ ago \(Swept: deleted by the sweeper: disconnected \(cleanly\) for the whole grace period\): registrar get events -n shop --for we\/web-10\.0\.4\.1\n$/,
    );

    // The whole namespace, as kubectl lists it; and as Kubernetes Event objects.
    const all = await registrar(testbed, ['get', 'events', '-n', NAMESPACE]);
    expect(all.stdout.split('\n')[0]).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    expect(rows(all.stdout).map((r) => r[1])).toEqual(
      expect.arrayContaining(['Swept', 'InstanceGone', 'Deleted']),
    );
    const json = JSON.parse(
      (
        await registrar(testbed, [
          'get',
          'events',
          '-n',
          NAMESPACE,
          '--for',
          `we/${names[1]}`,
          '-o',
          'json',
        ])
      ).stdout,
    );
    expect(json.kind).toBe('List');
    expect(json.items.at(-1)).toMatchObject({
      apiVersion: 'v1',
      kind: 'Event',
      involvedObject: { kind: 'WorkloadEntry', name: 'web-10.0.4.2', namespace: NAMESPACE },
      reason: 'InstanceGone',
      type: 'Normal',
      source: { component: 'ec2' },
      count: 1,
    });
  });

  it('-w prints each new event as it happens, until interrupted', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true });
    const testbed = bed;
    await testbed.applyGroup('web');
    await testbed.agent({});
    await waitFor(async () => (await testbed.entry('web-10.0.0.7'))?.connected === true, 'entry');
    const stop = new AbortController();
    // The CLI in this process, its output read as it comes (a watch never returns by itself).
    let out = '';
    const localJson = testbed.runtime.localJsonPath ?? '';
    const watching = runCli(['get', 'events', '-A', '-w', '--watch-interval', '100ms'], {
      env: { REGISTRAR_DATA_DIR: dirname(localJson) },
      cwd: tmpdir(),
      stdin: Readable.from(['']),
      stdout: { write: (text: string) => (out += text) },
      stderr: { write: () => true },
      signal: stop.signal,
    });
    await waitFor(() => out.includes('Registered'), 'the first list');
    expect((await registrar(testbed, ['cordon', 'we', 'web-10.0.0.7', '-n', NAMESPACE])).code).toBe(
      0,
    );
    await waitFor(() => out.includes('Cordoned'), 'the watch to print the cordon');
    stop.abort('SIGINT');
    const run = { code: await watching, stdout: out };
    expect(run.code).toBe(130);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines[0]).toMatch(/^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    expect(lines.slice(1).map((line) => line.split(/\s{2,}/)[3])).toEqual([
      'Registered',
      'Cordoned',
    ]);
  });

  it('locally, where the table has no TTL, deletes history items once they expired', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true, sweepIntervalMs: 200 });
    const testbed = bed;
    const old = { namespace: NAMESPACE, name: 'web-10.0.9.9' };
    const fresh = { namespace: NAMESPACE, name: 'web-10.0.9.10' };
    const eightDaysAgo = Date.now() - 8 * 24 * 3_600_000;
    for (const [ref, at] of [
      [old, eightDaysAgo],
      [fresh, Date.now()],
    ] as const) {
      await testbed.registry.applyEntry({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: ref,
        spec: { address: '10.0.9.9' },
      });
      await testbed.registry.removeEntry(ref, { at });
    }
    // Read as of its deletion, the expired item is there until the pruner takes it.
    await waitFor(
      async () =>
        (await testbed.registry.deletedEntries(NAMESPACE, old.name, eightDaysAgo)).length === 0,
      'the pruner to delete the expired history item',
    );
    expect(await testbed.registry.deletedEntries(NAMESPACE, fresh.name, Date.now())).toHaveLength(
      1,
    );
  });

  it('refuses what it cannot mean', async () => {
    bed = await startAgentTestbed({ writeLocalJson: true });
    const testbed = bed;
    const selector = await registrar(testbed, ['get', 'events', '-n', NAMESPACE, '-l', 'app=web']);
    expect(selector.code).toBe(2);
    expect(selector.stderr).toContain('get events takes -n/-A, --for, -o, -w and --no-headers');
    const forAll = await registrar(testbed, ['get', 'events', '-A', '--for', 'we/web-1']);
    expect(forAll.code).toBe(2);
    expect(forAll.stderr).toContain('--for looks up one namespace');
    const badFor = await registrar(testbed, ['get', 'events', '-n', NAMESPACE, '--for', 'web-1']);
    expect(badFor.code).toBe(2);
    expect(badFor.stderr).toContain(
      "--for takes TYPE/NAME, such as we/web-10.0.0.12 or wg/web; got 'web-1'",
    );
    const notEvents = await registrar(testbed, ['get', 'we', '--for', 'we/web-1']);
    expect(notEvents.code).toBe(2);
    const none = await registrar(testbed, ['get', 'events', '-n', 'empty']);
    expect(none).toMatchObject({
      code: 0,
      stdout: '',
      stderr: 'No events found in empty namespace.\n',
    });
  });
});
