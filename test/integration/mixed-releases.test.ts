import { afterAll, describe, expect, it } from 'vitest';
import type { WorkloadEntry } from '../../lib/domain/model.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import { restartablePort } from '../fixtures/ports.ts';
import {
  currentTree,
  type FleetProcess,
  killAll,
  previousReleaseSkip,
  previousTree,
  startAgent,
  startMixedRuntime,
  type Tree,
  waitForFleet as waitFor,
} from '../fixtures/release-fleet.ts';

/**
 * A deploy half-way, in the local runtime: the authorizer of one release in front of the
 * `$connect` (and `$disconnect`, messages) of the other, both orders, while the sweepers of
 * both releases take turns on one table (every 500 ms here; a minute apart on AWS). Agents of
 * both releases register, drain, leave cleanly and crash through it. Nothing is lost: every
 * live VM stays registered, a departed one is removed only after its grace period, and the
 * counters equal the registry. test/fixtures/mixed-release-runtime.ts composes the releases'
 * own Lambda entry points.
 */
const GRACE_MS = 4_000;

afterAll(() => killAll());

interface Vm {
  name: string;
  tree: Tree;
  ip: string;
  process?: FleetProcess;
}

async function story(authorizeFrom: Tree, restFrom: Tree, sweepers: Tree[]) {
  const port = await restartablePort();
  const runtime = await startMixedRuntime({
    port,
    functions: {
      authorize: authorizeFrom.dir,
      connect: restFrom.dir,
      disconnect: restFrom.dir,
      message: restFrom.dir,
    },
    sweepers: sweepers.map((tree) => tree.dir),
    sweepIntervalMs: 500,
    env: { REGISTRAR_GRACE_PERIOD: `${GRACE_MS}ms` },
  });
  const registrar = async (args: string[], stdin = '') => {
    const run = await captureCli(args, {
      env: {
        REGISTRAR_DYNAMODB_ENDPOINT: runtime.dynamoDbEndpoint,
        REGISTRAR_TABLE: runtime.tableName,
      },
      stdin,
    });
    if (run.code !== 0) throw new Error(`registrar ${args.join(' ')}: ${run.stderr}`);
    return run.stdout;
  };
  const entries = async () =>
    new Map(
      (
        JSON.parse(await registrar(['get', 'we', '-n', 'shop', '-o', 'json'])) as {
          items: WorkloadEntry[];
        }
      ).items.map((we) => [we.metadata.name, we]),
    );
  const connected = (we: WorkloadEntry | undefined) =>
    we?.metadata.annotations?.['istio.io/connectedAt'] !== undefined;
  try {
    await registrar(
      ['apply', '-f', '-'],
      'apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: { name: web, namespace: shop }\nspec: { template: { ports: { http: 8080 } } }\n',
    );
    const token = (await registrar(['token', 'create', '-n', 'shop'])).trim();
    const previous = authorizeFrom.label === 'previous' ? authorizeFrom : restFrom;
    const current = authorizeFrom.label === 'current' ? authorizeFrom : restFrom;
    const vms: Vm[] = [
      { name: 'stays-old', tree: previous, ip: '10.5.0.1' },
      { name: 'stays-new', tree: current, ip: '10.5.0.2' },
      { name: 'drains-old', tree: previous, ip: '10.5.0.3' },
      { name: 'drains-new', tree: current, ip: '10.5.0.4' },
      { name: 'crashes-old', tree: previous, ip: '10.5.0.5' },
      { name: 'crashes-new', tree: current, ip: '10.5.0.6' },
    ];
    for (const vm of vms) {
      vm.process = startAgent(vm.tree, vm.name, {
        url: runtime.url,
        group: 'web',
        namespace: 'shop',
        ip: vm.ip,
        token,
        args: ['--locality', 'us-east-1/us-east-1a', '--drain-delay', '1s'],
      });
    }
    const name = (vm: Vm) => `web-${vm.ip}`;
    await waitFor(
      async () => {
        const now = await entries();
        return vms.every((vm) => connected(now.get(name(vm))));
      },
      'every agent of both releases registered',
      60_000,
    );
    // Whose `$connect` ran shows: from 0.2.0 on, agents send their version and `$connect`
    // records it (an agent that sent none is shown as 0.1.x); 0.1.0 did neither.
    const before020 = (tree: Vm['tree']) => tree.version.startsWith('0.1.');
    const wide = await registrar(['get', 'we', '-n', 'shop', '-o', 'wide']);
    for (const vm of vms) {
      const shown = before020(restFrom)
        ? '<unknown>'
        : before020(vm.tree)
          ? '0.1.x'
          : vm.tree.version;
      const row = wide.split('\n').find((line) => line.startsWith(`${name(vm)} `)) ?? '';
      expect(row.trim().split(/\s+/).at(-1), vm.name).toBe(shown);
    }

    // Drains (the message route) and clean closes (`$disconnect`), crashes (no close frame).
    const drains = vms.filter((vm) => vm.name.startsWith('drains'));
    const crashes = vms.filter((vm) => vm.name.startsWith('crashes'));
    const stays = vms.filter((vm) => vm.name.startsWith('stays'));
    for (const vm of drains) vm.process?.signal('SIGTERM');
    await waitFor(
      async () => {
        const now = await entries();
        return drains.every((vm) =>
          now
            .get(name(vm))
            ?.status?.conditions?.some((c) => c.type === 'Healthy' && c.reason === 'Draining'),
        );
      },
      'the drains recorded',
      20_000,
    );
    await Promise.all(crashes.map((vm) => vm.process?.stop('SIGKILL')));
    await Promise.all(drains.map((vm) => vm.process?.exited));
    await waitFor(
      async () => {
        const now = await entries();
        return [...drains, ...crashes].every((vm) => !connected(now.get(name(vm))));
      },
      'the departures recorded',
      20_000,
    );
    const leftAt = new Map<string, number>();
    for (const [entry, we] of await entries()) {
      const at = we.metadata.annotations?.['istio.io/disconnectedAt'];
      if (at) leftAt.set(entry, Date.parse(at));
    }

    // The sweepers of both releases remove the departed after their grace period, and only
    // then; the live VMs stay.
    const removed = new Map<string, number>();
    await waitFor(
      async () => {
        const now = await entries();
        for (const vm of [...drains, ...crashes]) {
          if (!now.has(name(vm)) && !removed.has(name(vm))) removed.set(name(vm), Date.now());
        }
        for (const vm of stays)
          expect(connected(now.get(name(vm))), `${vm.name} connected`).toBe(true);
        return removed.size === drains.length + crashes.length;
      },
      'the departed VMs removed by the sweepers',
      GRACE_MS + 30_000,
    );
    for (const [entry, at] of removed) {
      expect(
        at - (leftAt.get(entry) ?? at),
        `${entry} removed after its grace period`,
      ).toBeGreaterThanOrEqual(GRACE_MS);
    }

    // Counters: the two live VMs connected, nothing away.
    await waitFor(
      async () => {
        const status = JSON.parse(await registrar(['sweep', 'status', '-o', 'json'])) as {
          cells: { namespace: string; connected: number; away: number }[];
          mode: string;
        };
        const shop = status.cells.filter((cell) => cell.namespace === 'shop');
        const sum = (field: 'connected' | 'away') =>
          shop.reduce((total, cell) => total + Math.max(0, cell[field]), 0);
        return status.mode === 'normal' && sum('connected') === stays.length && sum('away') === 0;
      },
      'the counters equal to the registry',
      10_000,
    );
    const errors = runtime
      .output()
      .split('\n')
      .filter((line) => /failed|error/i.test(line));
    expect(errors, 'no function or sweeper failed').toEqual([]);
    for (const tree of sweepers) {
      expect(runtime.output(), `the sweeper of the ${tree.label} release ran`).toContain(
        `swept by ${tree.dir}: deleted`,
      );
    }
  } finally {
    await runtime.stop();
    await killAll();
  }
}

describe.skipIf(testBackend() === 'dynamodb-local' || previousReleaseSkip() !== undefined)(
  'a deploy half-way: two releases on one table',
  () => {
    it("the previous release's authorizer in front of this release's $connect, sweepers of both", async () => {
      const [previous, current] = [await previousTree(), currentTree()];
      await story(previous, current, [current, previous]);
    }, 180_000);

    it("this release's authorizer in front of the previous release's $connect, sweepers of both", async () => {
      const [previous, current] = [await previousTree(), currentTree()];
      await story(current, previous, [previous, current]);
    }, 180_000);
  },
);
