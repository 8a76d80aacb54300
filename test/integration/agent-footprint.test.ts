import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ImdsStandIn, startImdsStandIn } from '../fixtures/agent-imds-stand-in.ts';
import { startHttpTarget, waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { killChild, unitNodeFlags } from '../fixtures/agent-unit.ts';
import { type MemoryCage, memoryCage, memoryCageAvailable } from '../fixtures/memory-cgroup.ts';

/**
 * The agent runs on every VM, so what it carries is held to a budget (docs/agent.md,
 * "Memory"): the shipped bundle, built by packaging/build-agent.sh, must stay under a size and
 * must not contain the AWS SDK (the agent signs and fetches credentials itself), a CLI
 * parser nor a validation library; started as the systemd unit starts it, with IMDS
 * discovery as on EC2, it must not load undici (Node's fetch and WebSocket), about 11 MB
 * resident the agent does not need.
 */
// 0.32 MB when the budget was set (whitespace and syntax minified; 0.52 MB before, yaml 0.26
// MB and ws 0.13 MB of it); 1.33 MB with zod, 2.38 MB with the AWS SDK's signer.
const BUNDLE_BUDGET_BYTES = 350_000;
const FORBIDDEN_INPUTS = [
  'node_modules/@aws-sdk/',
  'node_modules/@smithy/',
  'node_modules/@aws-crypto/',
  'node_modules/commander/',
  // Plain checks instead (lib/validation/fields.ts): zod was 0.78 MB and ~9 MB resident.
  'node_modules/zod/',
];
const FORBIDDEN_BUILTINS = ['internal/deps/undici/undici'];
// Preloaded into the agent: on SIGUSR2, the built-in modules it loaded, as one JSON line.
const MODULE_PROBE = `data:text/javascript,process.on('SIGUSR2', () => process.stderr.write(JSON.stringify({ loaded: process.moduleLoadList }) + '\\n'));`;

describe('the bundled agent footprint', () => {
  let dir: string;
  let bundle: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-footprint-'));
    execFileSync('sh', ['packaging/build-agent.sh'], {
      env: { ...process.env, OUT_DIR: dir, METAFILE: join(dir, 'meta.json') },
      stdio: 'ignore',
    });
    bundle = join(dir, 'registrar-agent.mjs');
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('stays under its size budget and bundles no AWS SDK, CLI parser nor zod', () => {
    expect(statSync(bundle).size).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as {
      inputs: Record<string, unknown>;
    };
    const inputs = Object.keys(meta.inputs);
    expect(inputs).toContain('agent/main.ts');
    expect(inputs.filter((input) => FORBIDDEN_INPUTS.some((p) => input.startsWith(p)))).toEqual([]);
  });

  describe('started as the systemd unit starts it', () => {
    let bed: AgentTestbed;
    let imds: ImdsStandIn;
    let child: ChildProcess | undefined;
    beforeAll(async () => {
      bed = await startAgentTestbed();
      imds = await startImdsStandIn({
        'instance-id': 'i-0f00tpr1nt',
        'local-ipv4': '10.31.0.7',
        'placement/availability-zone': 'eu-west-1a',
        'placement/region': 'eu-west-1',
      });
      await bed.applyGroup('lean');
    }, 60_000);
    afterAll(async () => {
      await killChild(child);
      await imds?.close();
      await bed?.close();
    });

    it('runs with the unit flags, discovers through IMDS and loads no undici', async () => {
      const nodeFlags = unitNodeFlags();
      const args = ['--url', bed.runtime.url, '--group', 'lean', '--namespace', 'shop'];
      child = spawn(
        process.execPath,
        [...nodeFlags, '--import', MODULE_PROBE, bundle, ...args, '--imds-url', imds.url],
        {
          env: { PATH: process.env.PATH ?? '', REGISTRAR_AGENT_TOKEN: bed.token },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      await waitFor(
        () => stderr.includes('connected connection=1'),
        'the agent to connect',
        30_000,
      );
      // Discovery went through the IMDS stand-in: the entry carries its address.
      expect(stderr).toContain('address=10.31.0.7');
      child.kill('SIGUSR2');
      const line = await waitFor(
        () => stderr.split('\n').find((l) => l.startsWith('{"loaded"')),
        'the module list',
      );
      const loaded = (JSON.parse(line) as { loaded: string[] }).loaded;
      expect(loaded).toContain('NativeModule http');
      expect(loaded.filter((m) => FORBIDDEN_BUILTINS.some((f) => m.endsWith(f)))).toEqual([]);
    }, 60_000);
  });

  // Needs root and a cgroup v1 memory controller (test/fixtures/memory-cgroup.ts): this
  // machine and CI's have both; elsewhere the test says it was skipped.
  it.skipIf(!memoryCageAvailable())(
    'in a cgroup of its own, as the systemd unit runs it (granted as root, run as a plain user), gives its start-up memory back and stays under 50 MB resident through hundreds of probes',
    async () => {
      const bed = await startAgentTestbed();
      const target = await startHttpTarget(200);
      // No limit: a service's own cgroup, nothing throttled.
      const cage = memoryCage();
      let child: ChildProcess | undefined;
      try {
        await bed.applyGroup('caged', { httpGet: { port: target.port }, periodSeconds: 1 });
        // As the unit runs it: the grant as root, then the agent as a plain user (the cage made
        // the temporary root traversable; the bundle's directory must be readable).
        chmodSync(dir, 0o755);
        const started = startBundle(
          bed,
          bundle,
          [
            ...['--group', 'caged', '--ip', '10.31.0.8', '--probe-time-scale', '0.01'],
            ...['--memory-reclaim-after', '2s'],
          ],
          { cage, as: { user: 'nobody', group: 'nogroup' } },
        );
        child = started.child;
        const gave = await started.said();
        expect(gave).toMatchObject({
          msg: 'gave the start-up memory back to the kernel',
          cgroup: cage.path,
        });
        expect(gave.rssAfterMb).toBeLessThan(Number(gave.rssBeforeMb));
        // 10 ms probes: 500 more of them is the agent at work well past the reclaim.
        const from = target.requests;
        await waitFor(() => target.requests >= from + 500, '500 probes', 60_000);
        await waitFor(
          async () => (await bed.entry('caged-10.31.0.8'))?.healthy === 'True',
          'the entry healthy',
        );
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        const rssMb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
        expect(child.exitCode).toBeNull();
        expect(rssMb).toBeGreaterThan(0);
        expect(rssMb).toBeLessThanOrEqual(50);
      } finally {
        await killChild(child);
        cage.close();
        await target.close();
        await bed.close();
      }
    },
    90_000,
  );

  it.skipIf(!memoryCageAvailable())(
    "without the unit's grant, a plain user cannot give the memory back, and the agent names the file and the fix",
    async () => {
      const bed = await startAgentTestbed();
      const cage = memoryCage();
      let child: ChildProcess | undefined;
      try {
        await bed.applyGroup('ungranted');
        chmodSync(dir, 0o755);
        const started = startBundle(
          bed,
          bundle,
          ['--group', 'ungranted', '--ip', '10.31.0.10', '--memory-reclaim-after', '100ms'],
          { cage, as: { user: 'nobody', group: 'nogroup', grant: false } },
        );
        child = started.child;
        const said = await started.said();
        expect(said.msg).toBe(
          `kept the start-up memory: cannot write /sys/fs/cgroup/memory${cage.path}/memory.force_empty: EACCES (the systemd unit hands the agent this file with ExecStartPre; see docs/agent.md)`,
        );
      } finally {
        await killChild(child);
        cage.close();
        await bed.close();
      }
    },
    60_000,
  );

  // The agent started by hand shares its cgroup with whatever started it (here, the test
  // runner): that memory is not the agent's to take back, and it leaves it alone.
  it('keeps the memory of a cgroup it shares with other processes', async () => {
    const bed = await startAgentTestbed();
    let child: ChildProcess | undefined;
    try {
      await bed.applyGroup('shared');
      const started = startBundle(bed, bundle, [
        ...['--group', 'shared', '--ip', '10.31.0.9', '--memory-reclaim-after', '100ms'],
      ]);
      child = started.child;
      const said = await started.said();
      expect(said.msg).toMatch(/^kept the start-up memory: /);
      expect(said.msg).toMatch(/also holds process \d+|root cgroup|no memory cgroup|not enabled/);
    } finally {
      await killChild(child);
      await bed.close();
    }
  }, 60_000);
});

type LogLine = { msg: string; [field: string]: unknown };

/**
 * Starts the bundle with the unit's Node flags against the testbed, JSON logs on, in `cage`
 * (and as `as`, the unit's way) or in the test runner's own cgroup; `said` waits for what the
 * agent decided about its start-up memory.
 */
function startBundle(
  bed: AgentTestbed,
  bundle: string,
  agentArgs: string[],
  where?: { cage: MemoryCage; as: Parameters<MemoryCage['args']>[1] },
): { child: ChildProcess; said: () => Promise<LogLine> } {
  const args = [
    ...[...unitNodeFlags(), bundle, '--url', bed.runtime.url, '--namespace', 'shop'],
    ...['--no-imds', '--log-format', 'json', ...agentArgs],
  ];
  const child = spawn(
    where ? where.cage.command : process.execPath,
    where ? where.cage.args(args, where.as) : args,
    {
      env: { PATH: process.env.PATH ?? '', REGISTRAR_AGENT_TOKEN: bed.token },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const logs = collectLines(child);
  const said = () =>
    waitFor(
      () => logs.find((line) => line.msg.includes('start-up memory')),
      'the agent to decide about its start-up memory',
      30_000,
    );
  return { child, said };
}

/** The agent's JSON log lines, as they arrive. */
function collectLines(child: ChildProcess): LogLine[] {
  const lines: LogLine[] = [];
  let pending = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    const parts = (pending + chunk.toString('utf8')).split('\n');
    pending = parts.pop() ?? '';
    for (const part of parts) {
      if (part.startsWith('{')) lines.push(JSON.parse(part));
    }
  });
  return lines;
}
