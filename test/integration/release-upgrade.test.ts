import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { WorkloadEntry } from '../../lib/domain/model.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import { restartablePort } from '../fixtures/ports.ts';
import {
  cli,
  currentTree,
  type FleetProcess,
  killAll,
  previousReleaseSkip,
  previousTree,
  startAgent,
  startRuntime,
  type Tree,
  waitForFleet as waitFor,
} from '../fixtures/release-fleet.ts';

/**
 * An upgrade under a live fleet, and the rollback, as CI runs them on every change: the
 * previous release (CHANGELOG.md; installed by test/fixtures/previous-release.ts) runs the
 * local runtime with VMs of its own agent in every state; it is stopped (Ctrl-C), and this
 * checkout's runtime starts on the same data dir; the agents reconnect by themselves. Then the
 * same back to the previous release, with the rollback procedure (`registrar sweep
 * rollback-index`): a VM that left under this release is still removed by the previous
 * release's sweeper (without the procedure it would stay: this test fails so).
 *
 * Each release is driven through its own `npm start`, `bin/registrar-agent.js` and
 * `bin/registrar.js`; the state is read with this checkout's CLI. The states before the
 * upgrade: connected VMs; one draining (SIGTERM with a 10-minute drain delay); one that left
 * cleanly within the grace period; three crashed (SIGKILL) past the grace period and kept by
 * fail static (their cell slowed to 0.001 deletions a second); a hand-made entry; groups;
 * tokens (one revoked); an IAM allow rule; the cell counters.
 *
 * The bound: every old agent registered again within 60 s of the new runtime's banner (the
 * agents' backoff cap: the downtime's failed attempts double it from 1 s).
 */
const GRACE_MS = 20_000;
const FLAGS = [
  '--grace-period',
  '20s',
  '--sweep-interval',
  '1s',
  // A $disconnect lost on a loaded machine is found as on AWS, by a liveness check, and well
  // within the grace period: three crashes must be away at once for fail static to slow their
  // cell, and with 30 s checks (a 2 h maximum age's shortest) one crash whose $disconnect was
  // lost (a connect abandoned under load leaves its connection on the entry) was found after
  // the first two were deleted. 5 s is the shortest a 10-minute maximum age allows (1.5 x 10 min
  // / 360 = 2.5 s); the test takes about two.
  '--max-connection-age',
  '10m',
  '--liveness-interval',
  '5s',
  '--secondary-deletes-per-second',
  '0.001',
];
const REREGISTER_BOUND_MS = 60_000;
const LOCALITY = ['--locality', 'us-east-1/us-east-1a'];

const dataDir = mkdtempSync(join(tmpdir(), 'registrar-upgrade-'));
const began = Date.now();
/** Where the story is, on stderr: a slow step on a loaded machine is then plain to see. */
const progress = (what: string) =>
  process.stderr.write(`upgrade test +${((Date.now() - began) / 1000).toFixed(1)} s: ${what}\n`);
afterAll(async () => {
  await killAll();
  rmSync(dataDir, { recursive: true, force: true });
});

const GROUPS = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: web, namespace: shop }
spec: { template: { ports: { http: 8080 } } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: web, namespace: pay }
spec: { template: { ports: { http: 8080 } } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: jobs, namespace: batch }
spec: { template: { ports: { grpc: 9000 } } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: db-1, namespace: shop, labels: { app: db } }
spec: { address: 10.9.0.5, ports: { tcp: 5432 } }
`;

/** This checkout's CLI, in this process, against the runtime of the data dir. */
async function registrar(args: string[]): Promise<string> {
  const run = await captureCli(args, { env: { REGISTRAR_DATA_DIR: dataDir } });
  if (run.code !== 0) throw new Error(`registrar ${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

async function entries(): Promise<Map<string, WorkloadEntry>> {
  const list = JSON.parse(await registrar(['get', 'we', '-A', '-o', 'json'])) as {
    items: WorkloadEntry[];
  };
  return new Map(list.items.map((we) => [`${we.metadata.namespace}/${we.metadata.name}`, we]));
}

const connectedAt = (we: WorkloadEntry | undefined) =>
  we?.metadata.annotations?.['istio.io/connectedAt'];
const disconnectedAt = (we: WorkloadEntry | undefined) => {
  const at = we?.metadata.annotations?.['istio.io/disconnectedAt'];
  return at === undefined ? undefined : Date.parse(at);
};
const healthy = (we: WorkloadEntry | undefined) =>
  we?.status?.conditions?.find((c) => c.type === 'Healthy');

interface Cell {
  namespace: string;
  connected: number;
  away: number;
  state?: string;
}

/** The counters by namespace (one zone here), as `registrar sweep status` reads them. */
async function sweepStatus(): Promise<{ mode: string; cells: Cell[] }> {
  return JSON.parse(await registrar(['sweep', 'status', '-o', 'json']));
}

interface Vm {
  name: string;
  namespace: string;
  group: string;
  ip: string;
  tree: Tree;
  process?: FleetProcess;
  /** Left abnormally (crash, or its connection cut while it drained): counted away. */
  abnormal?: boolean;
  /** Left for good (its agent exited). */
  gone?: boolean;
}

const key = (vm: Vm) => `${vm.namespace}/${vm.group}-${vm.ip}`;

/**
 * The counters' truth from the registry as it is now: per namespace, the entries connected,
 * and the entries present, disconnected, whose VM left abnormally.
 */
function truth(vms: readonly Vm[], now: Map<string, WorkloadEntry>): Map<string, Cell> {
  const cells = new Map<string, Cell>();
  for (const vm of vms) {
    const we = now.get(key(vm));
    if (!we) continue;
    const cell = cells.get(vm.namespace) ?? { namespace: vm.namespace, connected: 0, away: 0 };
    if (connectedAt(we)) cell.connected += 1;
    else if (vm.abnormal) cell.away += 1;
    cells.set(vm.namespace, cell);
  }
  return cells;
}

function counted(status: { cells: Cell[] }): Map<string, Cell> {
  const cells = new Map<string, Cell>();
  for (const { namespace, connected, away } of status.cells) {
    const cell = cells.get(namespace) ?? { namespace, connected: 0, away: 0 };
    cell.connected += Math.max(0, connected);
    cell.away += Math.max(0, away);
    cells.set(namespace, cell);
  }
  for (const [namespace, cell] of cells) {
    if (cell.connected === 0 && cell.away === 0) cells.delete(namespace);
  }
  return cells;
}

async function countersMatch(vms: readonly Vm[]): Promise<boolean> {
  const expected = truth(vms, await entries());
  for (const [namespace, cell] of expected) {
    if (cell.connected === 0 && cell.away === 0) expected.delete(namespace);
  }
  const actual = counted(await sweepStatus());
  return JSON.stringify([...expected].sort()) === JSON.stringify([...actual].sort());
}

/** Waits until every live VM's entry was connected again after `since`; returns when. */
async function allReconnected(vms: readonly Vm[], since: number, what: string): Promise<number> {
  const live = vms.filter((vm) => !vm.gone);
  await waitFor(
    async () => {
      const now = await entries();
      return live.every((vm) => {
        const at = connectedAt(now.get(key(vm)));
        return at !== undefined && Date.parse(at) >= since;
      });
    },
    what,
    REREGISTER_BOUND_MS,
  );
  return Date.now();
}

/**
 * Tokens, allow rules, groups and hand-made entries, as a release's own CLI lists them across
 * namespaces (`-A` where its lists take it: a release that lists every namespace by default
 * refuses the flag, and is asked without it).
 */
async function operatorState(tree: Tree, via: 'tree' | 'current' = 'current') {
  const read = async (args: string[]) => {
    if (via === 'current') return registrar(args);
    const run = await cli(tree, dataDir, args);
    if (run.code === 0) return run.stdout;
    const without = await cli(
      tree,
      dataDir,
      args.filter((arg) => arg !== '-A'),
    );
    if (without.code !== 0)
      throw new Error(`registrar ${tree.version} ${args.join(' ')}: ${without.stderr}`);
    return without.stdout;
  };
  const [tokens, policies, groups, all] = await Promise.all([
    read(['token', 'list', '-A', '-o', 'json']),
    read(['policy', 'list', '-A', '-o', 'json']),
    read(['get', 'wg', '-A', '-o', 'json']),
    read(['get', 'we', '-A', '-o', 'json']),
  ]);
  const handMade = (JSON.parse(all) as { items: WorkloadEntry[] }).items.filter(
    (we) => we.metadata.annotations?.['istio.io/autoRegistrationGroup'] === undefined,
  );
  return {
    tokens: JSON.parse(tokens),
    policies: JSON.parse(policies),
    groups: JSON.parse(groups),
    handMade,
  };
}

// The runtimes keep their own dynalite in the data dir: no DynamoDB Local variant of this.
describe.skipIf(testBackend() === 'dynamodb-local' || previousReleaseSkip() !== undefined)(
  'upgrade and rollback under a live fleet',
  () => {
    it('keeps every VM, entry, token, rule and counter, and every old agent registers again', async () => {
      const started = Date.now();
      const previous = await previousTree();
      const current = currentTree();
      const port = await restartablePort();
      const url = `ws://127.0.0.1:${port}`;
      const runtimeArgs = ['--port', String(port), '--data-dir', dataDir, ...FLAGS];
      const old = async (args: string[], stdin?: string) => {
        const run = await cli(previous, dataDir, args, stdin);
        if (run.code !== 0)
          throw new Error(`registrar ${previous.version} ${args.join(' ')}: ${run.stderr}`);
        return run.stdout.trim();
      };

      progress(`release ${previous.version} installed; starting its runtime`);
      // The previous release, set up by its own CLI.
      let runtime = await startRuntime(previous, runtimeArgs);
      progress('runtime up; applying groups, tokens and a rule with its CLI');
      await old(['apply', '-f', '-'], GROUPS);
      const token = {
        shop: await old(['token', 'create', '-n', 'shop']),
        pay: await old(['token', 'create', '-n', 'pay']),
        batch: await old(['token', 'create', '-n', 'batch']),
      };
      await old(['token', 'create', '-n', 'shop', '--ttl', '1h']);
      // -n: from 0.2.0 on a list without it shows the `default` namespace only, as kubectl's.
      const listed = JSON.parse(await old(['token', 'list', '-n', 'shop', '-o', 'json'])) as {
        items: { id: string; expiresAt?: string }[];
      };
      const shortLived = listed.items.find(
        (t) => t.expiresAt !== undefined && Date.parse(t.expiresAt) < Date.now() + 2 * 3_600_000,
      );
      // After '--': 0.2.0 made one id in 64 begin with '-', which its CLI reads as an option
      // (lib/auth/join-token.ts, newTokenId; a fresh-clone CI run failed on one).
      await old(['token', 'revoke', '--', shortLived?.id ?? 'missing']);
      await old([
        'policy',
        'allow',
        '--role-arn',
        'arn:aws:iam::123456789012:role/web-vm',
        '-n',
        'shop',
      ]);

      const vm = (
        name: string,
        namespace: 'shop' | 'pay' | 'batch',
        ip: string,
        tree: Tree = previous,
      ): Vm => ({
        name,
        namespace,
        group: namespace === 'batch' ? 'jobs' : 'web',
        ip,
        tree,
      });
      const stays = [
        vm('s1', 'shop', '10.1.0.1'),
        vm('s2', 'shop', '10.1.0.2'),
        vm('p1', 'pay', '10.2.0.1'),
        vm('p2', 'pay', '10.2.0.2'),
        vm('b4', 'batch', '10.3.0.4'),
      ];
      const leavesCleanly = vm('s3', 'shop', '10.1.0.3');
      const drains = vm('s4', 'shop', '10.1.0.4');
      const crashes = [
        vm('b1', 'batch', '10.3.0.1'),
        vm('b2', 'batch', '10.3.0.2'),
        vm('b3', 'batch', '10.3.0.3'),
      ];
      const fleet = [...stays, leavesCleanly, drains, ...crashes];
      const launch = (one: Vm, args: string[] = []) => {
        one.process = startAgent(one.tree, one.name, {
          url,
          group: one.group,
          namespace: one.namespace,
          ip: one.ip,
          token: token[one.namespace as keyof typeof token],
          args: [...LOCALITY, ...args],
        });
      };
      for (const one of fleet)
        launch(
          one,
          one === drains
            ? ['--drain-delay', '10m']
            : one === leavesCleanly
              ? ['--drain-delay', '0s']
              : [],
        );
      await waitFor(
        async () => {
          const now = await entries();
          return fleet.every((one) => connectedAt(now.get(key(one))));
        },
        'every VM of the previous release registered',
        60_000,
      );

      // Crashes: no close frame. Their cell (3 of 4 away) is slowed; past the grace period they
      // are due, and fail static keeps them (one may go at once: a newly slowed cell's credit).
      for (const one of crashes) {
        one.abnormal = true;
        one.gone = true;
        await one.process?.stop('SIGKILL');
      }
      const crashedAt = Date.now();
      progress('crashed three VMs; waiting for their grace period and fail static');
      let lastStatus: unknown;
      await waitFor(
        async () => {
          const status = await sweepStatus();
          lastStatus = status;
          return (
            Date.now() > crashedAt + GRACE_MS + 3_000 &&
            status.cells.some((c) => c.namespace === 'batch' && c.state === 'slowed')
          );
        },
        'the crashed VMs due, and their cell slowed',
        GRACE_MS + 90_000,
      ).catch((error: Error) => {
        throw new Error(
          `${error.message}; sweep status: ${JSON.stringify(lastStatus)}; runtime:\n${runtime.output().slice(-4000)}`,
        );
      });
      const beforeUpgrade = await entries();
      const heldKept = crashes.filter((one) => beforeUpgrade.has(key(one)));
      expect(
        heldKept.length,
        'crashed VMs past their grace period kept by fail static',
      ).toBeGreaterThanOrEqual(2);

      progress('draining one VM, stopping another cleanly');
      // Draining: SIGTERM with a 10-minute drain delay; its entry turns Healthy False, Draining.
      drains.process?.signal('SIGTERM');
      await waitFor(
        async () => healthy((await entries()).get(key(drains)))?.reason === 'Draining',
        'the drain',
        20_000,
      );
      // Leaves cleanly (no drain delay): within the grace period at the upgrade.
      await leavesCleanly.process?.stop('SIGTERM');
      leavesCleanly.gone = true;
      await waitFor(
        async () => disconnectedAt((await entries()).get(key(leavesCleanly))),
        'the clean departure',
        20_000,
      );
      const before = await entries();
      // As each release's CLI shows them: this one's after the upgrade, the previous one's after
      // the rollback.
      const operator = await operatorState(previous);
      const operatorOld = await operatorState(previous, 'tree');
      expect(operator.handMade).toHaveLength(1);
      expect(operator.policies.items).toHaveLength(1);
      expect(operator.tokens.items).toHaveLength(4);
      expect(operatorOld.tokens.items).toHaveLength(4);

      progress('upgrading');
      // Upgrade: Ctrl-C, and this checkout's runtime on the same data dir. The draining VM's
      // connection ends as the old runtime begins to stop, which under load is well before the
      // stop returns: its departure can be recorded from this time on.
      const stoppingAt = Date.now();
      expect(await runtime.stop()).not.toBe(1);
      // The drain ends with the connection: that VM is gone, its entry away (the gateway's 1001).
      drains.abnormal = true;
      drains.gone = true;
      const stoppedAt = Date.now();
      runtime = await startRuntime(current, runtimeArgs);
      const upAt = Date.now();
      progress(`runtime ${current.version} up; waiting for the old agents`);
      const backAt = await allReconnected(
        fleet,
        stoppedAt,
        'every live VM of the previous release registered again with this release',
      );
      const reregisterMs = backAt - upAt;
      expect(reregisterMs).toBeLessThanOrEqual(REREGISTER_BOUND_MS);

      progress('old agents back; starting new ones');
      // New agents beside the old ones.
      const fresh = [vm('n1', 'shop', '10.1.0.9', current), vm('n2', 'pay', '10.2.0.9', current)];
      for (const one of fresh) launch(one);
      fleet.push(...fresh);
      await allReconnected(fresh, stoppedAt, 'the agents of this release registered');

      const after = await entries();
      // When each VM left: its recorded departure, or, for the draining VM, whose connection
      // ended with the old runtime, the earliest it can have: the stop's start (a loaded
      // machine can take longer than the grace period to bring the fleet back, and then its
      // deletion is due, not a loss).
      const leftAt = (name: string, we: WorkloadEntry | undefined) =>
        disconnectedAt(we) ?? (name === key(drains) ? stoppingAt : undefined);
      const isDue = (name: string, we: WorkloadEntry | undefined) => {
        const left = leftAt(name, we);
        return left !== undefined && Date.now() - left >= GRACE_MS;
      };
      // Nothing deleted that should not be: every entry of before is here, unless it was due
      // (disconnected a grace period ago) and its deletion allowed; live VMs connected.
      for (const [name, we] of before)
        if (!isDue(name, we))
          expect(after.has(name), `${name} (not due) kept by the upgrade`).toBe(true);
      for (const one of fleet.filter((v) => !v.gone))
        expect(connectedAt(after.get(key(one))), `${one.name} connected`).toBeDefined();
      // The drained VM, while it is kept, is never routable again: still Draining, or
      // Disconnected once this release found its connection gone.
      const drained = healthy(after.get(key(drains)));
      if (after.has(key(drains))) {
        expect(drained?.status, 'the drained VM not routable').toBe('False');
        expect(['Draining', 'Disconnected']).toContain(drained?.reason);
      }
      expect(await operatorState(current)).toEqual(operator);

      // Counters equal the truth; nothing held once the fleet is back.
      await waitFor(() => countersMatch(fleet), 'the counters equal to the registry', 20_000);
      await waitFor(
        async () => (await sweepStatus()).mode !== 'held',
        'no hold once the fleet is back',
        20_000,
      );

      // The table records the release that wrote it (what a refusal of a rollback would name).
      const schema = JSON.parse(await registrar(['migrate', 'status', '-o', 'json']));
      expect(schema.record).toMatchObject({ writtenBy: current.version, readableFrom: 1 });
      // Fail static's record carried over: the crashed VMs' cell is still slowed.
      expect((await sweepStatus()).cells.find((c) => c.namespace === 'batch')?.state).toBe(
        'slowed',
      );

      // Which agent each VM runs.
      const wide = await registrar(['get', 'we', '-A', '-o', 'wide']);
      // What the old agents are shown as: a 0.1 agent sends no version (0.1.x); later ones theirs.
      const oldAgent = previous.version.startsWith('0.1.') ? '0.1.x' : previous.version;
      for (const one of stays)
        expect(wide).toMatch(
          new RegExp(
            `\\s${one.group}-${one.ip.replaceAll('.', '\\.')}\\s.*\\s${oldAgent.replaceAll('.', '\\.')}\\n`,
          ),
        );
      for (const one of fresh)
        expect(wide).toMatch(
          new RegExp(
            `\\s${one.group}-${one.ip.replaceAll('.', '\\.')}\\s.*\\s${current.version.replaceAll('.', '\\.')}\\n`,
          ),
        );
      const agents = JSON.parse(await registrar(['get', 'agents', '-A', '-o', 'json'])).items;
      expect(agents).toEqual(
        expect.arrayContaining([
          { namespace: 'pay', agentVersion: oldAgent, entries: 2, connected: 2 },
          { namespace: 'pay', agentVersion: current.version, entries: 1, connected: 1 },
        ]),
      );

      // A VM that leaves under this release: its departure is queued in this release's
      // per-namespace sweep keys, which the previous release's sweeper never reads.
      const leavesBeforeRollback = vm('n3', 'shop', '10.1.0.10', current);
      launch(leavesBeforeRollback, ['--drain-delay', '0s']);
      await allReconnected(
        [leavesBeforeRollback],
        stoppedAt,
        'the VM that leaves before the rollback',
      );
      await leavesBeforeRollback.process?.stop('SIGTERM');
      leavesBeforeRollback.gone = true;
      await waitFor(
        async () => disconnectedAt((await entries()).get(key(leavesBeforeRollback))),
        'the departure under this release',
        20_000,
      );

      progress('rolling back');
      // Rollback: the previous release on the data dir this one wrote.
      expect(await runtime.stop()).not.toBe(1);
      const rolledBackAt = Date.now();
      runtime = await startRuntime(previous, runtimeArgs);
      const rollbackUpAt = Date.now();
      const rollbackBackAt = await allReconnected(
        fleet,
        rolledBackAt,
        'every live VM registered again after the rollback',
      );
      progress('every VM back after the rollback; checking');
      const afterRollback = await entries();
      for (const [name, we] of after)
        if (!isDue(name, we))
          expect(afterRollback.has(name), `${name} (not due) kept by the rollback`).toBe(true);
      // The previous release's own CLI reads what this one wrote.
      expect(await operatorState(previous, 'tree')).toEqual(operatorOld);
      expect(await operatorState(previous)).toEqual(operator);
      await waitFor(
        () => countersMatch(fleet),
        'the counters equal to the registry after the rollback',
        20_000,
      );
      await waitFor(
        async () => (await sweepStatus()).mode !== 'held',
        'no hold after the rollback',
        20_000,
      );
      // The rollback procedure (docs/deploy.md): this release's CLI moves its departures back
      // to the keys the previous release sweeps; its sweeper then removes the VM that left
      // under this release, after its grace period, as any other.
      // At least the VM that left under this release (the drained one may still be there too).
      expect(await registrar(['sweep', 'rollback-index'])).toMatch(
        /^[1-9]\d* departed entr(y|ies) moved to the keys release 0\.1\.0 sweeps\n$/,
      );
      await waitFor(
        async () => !(await entries()).has(key(leavesBeforeRollback)),
        "the previous release's sweeper removing the VM that left under this release",
        GRACE_MS + 60_000,
      );

      // The record still names the newer release: a later refusal would name it.
      expect(JSON.parse(await registrar(['migrate', 'status', '-o', 'json'])).record).toMatchObject(
        {
          writtenBy: current.version,
        },
      );
      expect(await runtime.stop()).not.toBe(1);

      console.log(
        `upgrade ${previous.version} -> ${current.version}: old agents registered again ${reregisterMs} ms after the new runtime started (bound ${REREGISTER_BOUND_MS}); rollback: ${rollbackBackAt - rollbackUpAt} ms; whole story ${((Date.now() - started) / 1000).toFixed(0)} s`,
      );
    }, 420_000);
  },
);
