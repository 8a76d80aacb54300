import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, type TestAgent, testbedFor } from '../fixtures/agent-testbed.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import { restartablePort } from '../fixtures/ports.ts';

/**
 * The runtime is SIGKILLed with VMs connected (no $disconnect runs for any of them) and
 * restarted on the same data dir, as `npm start` with the settings:
 * `--grace-period 2s --sweep-interval 300ms --max-connection-age 60s` (so liveness checks
 * run every 15 s, a quarter of the max age), and `--connect-settle 1s` so connections opened
 * just before the kill may be found gone. Three kinds of VM, real agents throughout:
 * - never come back: gone within 30 s of the restart (found by the liveness check);
 * - come back, then leave cleanly: gone within grace + 15 s of leaving (their old, dead
 *   connections must not keep them registered);
 * - stay: connected throughout.
 */
const FLAGS = [
  '--grace-period',
  '2s',
  '--sweep-interval',
  '300ms',
  '--max-connection-age',
  '60s',
  '--connect-settle',
  '1s',
];
const GRACE_MS = 2_000;
/** Each group's VMs have their own addresses: an address is unique within a network. */
const subnet = (group: string) => `10.2.${['gone', 'back', 'stay'].indexOf(group)}`;

const children: ChildProcess[] = [];
const beds: AgentTestbed[] = [];
let dataDir: string | undefined;

afterAll(async () => {
  for (const bed of beds) await bed.close().catch(() => {});
  for (const child of children) child.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

// The runtime's own dynalite keeps the data dir: there is no DynamoDB Local variant of this.
describe.skipIf(testBackend() === 'dynamodb-local')(
  'runtime SIGKILL and restart on the same data dir',
  () => {
    it('removes VMs that never come back, keeps the ones that stay, and lets returning ones leave', async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'registrar-restart-'));
      const port = await restartablePort();

      const first = await startRuntime(dataDir, port);
      const bed = await testbedFor(first.runtime);
      beds.push(bed);
      for (const group of ['gone', 'back', 'stay']) await bed.applyGroup(group);
      const agents = new Map<string, TestAgent[]>();
      for (const group of ['gone', 'back', 'stay']) {
        const started: TestAgent[] = [];
        for (let i = 1; i <= 4; i += 1)
          started.push(await bed.agent({ group, ips: [`${subnet(group)}.${i}`] }));
        agents.set(group, started);
      }
      const all = [...agents.values()].flat();
      await waitFor(() => all.every((a) => a.running.supervisor.entryName), 'every VM registered');

      // SIGKILL: no connection gets its $disconnect. The `gone` VMs never reconnect.
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));
      await Promise.all((agents.get('gone') ?? []).map((agent) => agent.stop()));

      const startingAt = Date.now();
      const second = await startRuntime(dataDir, port);
      const restartedAt = Date.now();
      // The store moved to a new endpoint; the agents still use the same WebSocket URL.
      const after = await testbedFor(second.runtime, bed.token);
      beds.push(after);
      const state = async (group: string, i: number) =>
        after
          .entry(`${group}-${subnet(group)}.${i}`)
          .then((entry) =>
            entry === undefined ? 'absent' : entry.connected ? 'connected' : 'disconnected',
          );
      const states = (group: string) => Promise.all([1, 2, 3, 4].map((i) => state(group, i)));

      // The returning and staying VMs connect again through new connections (an entry that
      // still lists its dead connection looks connected: the agents' own events decide).
      const returning = [...(agents.get('back') ?? []), ...(agents.get('stay') ?? [])];
      await waitFor(
        () =>
          returning.every((agent) =>
            agent.events.some((e) => e.type === 'connected' && e.at >= startingAt),
          ),
        'the returning VMs connected again',
        20_000,
      );
      expect([...(await states('back')), ...(await states('stay'))]).toEqual(
        Array(8).fill('connected'),
      );

      // The returning VMs leave cleanly: each entry still lists its dead pre-kill connection.
      await Promise.all((agents.get('back') ?? []).map((agent) => agent.stop()));
      const leftAt = Date.now();
      await waitFor(
        async () => (await states('back')).every((s) => s === 'absent'),
        'the departed VMs removed',
        GRACE_MS + 15_000,
      );
      const backGoneMs = Date.now() - leftAt;

      await waitFor(
        async () => (await states('gone')).every((s) => s === 'absent'),
        'the VMs that never came back removed',
        Math.max(1_000, 30_000 - (Date.now() - restartedAt)),
      );
      const goneAfterMs = Date.now() - restartedAt;

      // The VMs that stayed are connected, now that everything else was swept.
      expect(await states('stay')).toEqual(['connected', 'connected', 'connected', 'connected']);
      console.log(
        `restart: never-returning VMs gone ${goneAfterMs} ms after the restart (bound 30000); returning VMs gone ${backGoneMs} ms after leaving (bound ${GRACE_MS + 15_000})`,
      );
      expect(goneAfterMs).toBeLessThanOrEqual(30_000);
      expect(backGoneMs).toBeLessThanOrEqual(GRACE_MS + 15_000);
    }, 120_000);

    it('never holds VMs that come back and stop cleanly while their lost connections are younger than the connect settle time', async () => {
      // The disconnect of a clean stop cannot drop the dead pre-kill connections (younger than
      // the settle time); the liveness check drops them later. Every VM of the fleet does
      // this at once, so were their departures read as abnormal, fail static would hold them
      // all for an hour (every cell 100% away).
      const flags = [
        '--grace-period',
        '2s',
        '--sweep-interval',
        '300ms',
        '--max-connection-age',
        '60s',
        '--liveness-interval',
        '4s',
        '--connect-settle',
        '8s',
      ];
      const dir = await mkdtemp(join(tmpdir(), 'registrar-restart-clean-'));
      try {
        const port = await restartablePort();
        const first = await startRuntime(dir, port, flags);
        const bed = await testbedFor(first.runtime);
        beds.push(bed);
        await bed.applyGroup('back');
        const fleet: TestAgent[] = [];
        for (let i = 1; i <= 6; i += 1)
          fleet.push(await bed.agent({ group: 'back', ips: [`10.3.0.${i}`] }));
        await waitFor(
          () => fleet.every((a) => a.running.supervisor.entryName),
          'every VM registered',
        );

        first.child.kill('SIGKILL');
        await new Promise((resolve) => first.child.once('exit', resolve));
        const startingAt = Date.now();
        const second = await startRuntime(dir, port, flags);
        const after = await testbedFor(second.runtime, bed.token);
        beds.push(after);
        await waitFor(
          () =>
            fleet.every((agent) =>
              agent.events.some((e) => e.type === 'connected' && e.at >= startingAt),
            ),
          'the VMs connected again',
          20_000,
        );

        await Promise.all(fleet.map((agent) => agent.stop()));
        const leftAt = Date.now();
        const absent = async () => {
          const entries = await Promise.all(
            [1, 2, 3, 4, 5, 6].map((i) => after.entry(`back-10.3.0.${i}`)),
          );
          return entries.every((entry) => entry === undefined) || undefined;
        };
        // Settle (8 s) + liveness interval (4 s) + grace (2 s) + sweeps, with room for a slow
        // machine; a hold would keep them for an hour.
        const bound = 8_000 + 4_000 + GRACE_MS + 10_000;
        await waitFor(absent, 'the cleanly stopped VMs removed', bound);
        console.log(
          `restart, clean stops with leftovers: removed ${Date.now() - leftAt} ms after the stop (bound ${bound})`,
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 120_000);

    it('raises no hold when npm start restarts under a live fleet: its own shutdown is no outage', async () => {
      // SIGTERM: the runtime closes every connection (1001 Going away) and runs their
      // $disconnects, so every entry is away abnormally until its agent reconnects. A sweep
      // right at the start judged them before they could: HELD for every namespace, which the
      // rows contradicted a moment later (issue 46). The first run waits one interval.
      const flags = [
        '--grace-period',
        '60s',
        '--sweep-interval',
        '2s',
        '--max-connection-age',
        '60s',
      ];
      const dir = await mkdtemp(join(tmpdir(), 'registrar-restart-alarm-'));
      try {
        const port = await restartablePort();
        const first = await startRuntime(dir, port, flags);
        const bed = await testbedFor(first.runtime);
        beds.push(bed);
        await bed.applyGroup('web');
        const fleet: TestAgent[] = [];
        for (let i = 1; i <= 6; i += 1)
          fleet.push(await bed.agent({ group: 'web', ips: [`10.4.0.${i}`] }));
        await waitFor(
          () => fleet.every((a) => a.running.supervisor.entryName),
          'every VM registered',
        );

        first.child.kill('SIGTERM');
        await new Promise((resolve) => first.child.once('exit', resolve));
        const startingAt = Date.now();
        const second = await startRuntime(dir, port, flags);
        const env = {
          REGISTRAR_DYNAMODB_ENDPOINT: second.runtime.dynamoDbEndpoint,
          REGISTRAR_TABLE: second.runtime.tableName,
        };
        const modes = new Set<string>();
        // The CLI answers at once after the restart, before the sweeper's first run (which
        // waits an interval on a restarted registry): its last run is still the old process's.
        const right = await captureCli(['get', 'we', '-A', '-o', 'name'], { env });
        expect(right.code, right.stderr).toBe(0);
        expect(right.stdout.trim().split('\n')).toHaveLength(6);
        const before = JSON.parse(
          (await captureCli(['sweep', 'status', '-o', 'json'], { env })).stdout,
        );
        // Within the interval the record is still the old process's: no run at the start. Two
        // CLI starts can take longer than the 2 s interval on a loaded machine; the first run
        // has then rightly happened, and the modes below still show any hold it declared.
        if (Date.now() - startingAt < 2_000) {
          expect(
            before.evaluatedAt === null || Date.parse(before.evaluatedAt) < startingAt,
            `sweep status ${JSON.stringify(before)} within the first interval after a restart`,
          ).toBe(true);
        }
        modes.add(before.mode);
        const status = async () => {
          const run = await captureCli(['sweep', 'status', '-o', 'json'], { env });
          const parsed = JSON.parse(run.stdout) as { mode: string; evaluatedAt: string | null };
          modes.add(parsed.mode);
          return parsed;
        };
        await waitFor(
          async () =>
            (await status()) &&
            fleet.every((agent) =>
              agent.events.some((e) => e.type === 'connected' && e.at >= startingAt),
            ),
          'the VMs connected again',
          30_000,
        );
        const back = Date.now();
        // Two runs after every VM is back: a hold declared at any run since the start shows.
        await waitFor(
          async () => {
            const { evaluatedAt } = await status();
            return evaluatedAt !== null && Date.parse(evaluatedAt) > back + 2_000
              ? true
              : undefined;
          },
          'two sweeper runs after the VMs came back',
          30_000,
        );
        expect([...modes].filter((mode) => mode !== 'normal')).toEqual([]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 120_000);
  },
);

interface StartedRuntime {
  child: ChildProcess;
  runtime: LocalRuntime;
}

/** `npm start` in a child process; resolves once it wrote local.json (it is serving). */
async function startRuntime(
  dir: string,
  port: number,
  flags: readonly string[] = FLAGS,
): Promise<StartedRuntime> {
  const localJson = join(dir, 'local.json');
  await rm(localJson, { force: true });
  const child = spawn(
    process.execPath,
    ['infra/local/main.ts', '--data-dir', dir, '--port', String(port), ...flags],
    { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } },
  );
  children.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const written = await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`npm start exited: ${output}`);
      return readFile(localJson, 'utf8').catch(() => undefined);
    },
    'the runtime to start',
    20_000,
  );
  const described = JSON.parse(written) as Pick<
    LocalRuntime,
    'url' | 'managementUrl' | 'dynamoDbEndpoint' | 'tableName' | 'region'
  >;
  const runtime = {
    ...described,
    config: undefined as never,
    notices: [],
    sweepNow: () => Promise.reject(new Error('the runtime runs in another process')),
    // The test kills the process itself; the beds only stop their agents and clients.
    close: async () => {},
  } satisfies LocalRuntime;
  return { child, runtime };
}
