import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runCli } from '../../cli/main.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, entryName, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * `registrar get --watch` as an operator uses it to watch VMs come and go: the real local
 * runtime (gateway, handlers, dynalite) with its `.registrar/local.json`, real agents, and
 * the CLI both as a process (started in a subdirectory, stopped with Ctrl-C) and in-process.
 */

let root: string;
let bed: AgentTestbed;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'registrar-watch-'));
  bed = await startAgentTestbed({ dataDir: join(root, '.registrar'), writeLocalJson: true });
  await bed.applyGroup('web');
});

afterAll(async () => {
  await bed?.close();
  await rm(root, { recursive: true, force: true });
});

/** Without the variables that would name another registry: it must find `.registrar/`. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (name.startsWith('REGISTRAR_') || name === 'AWS_REGION') delete env[name];
  }
  return env;
}

describe('registrar get --watch, as a process', () => {
  it('streams an agent registering, disconnecting and its entry deleted, and stops on Ctrl-C', async () => {
    const cwd = join(root, 'deploy', 'vms');
    await mkdir(cwd, { recursive: true });
    const child = spawn(
      process.execPath,
      [
        join(process.cwd(), 'bin', 'registrar.js'),
        'get',
        'we',
        '-n',
        'shop',
        '--watch',
        '--output-watch-events',
        '--watch-interval',
        '200ms',
      ],
      { cwd, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    try {
      const name = entryName('web', '10.0.5.1');
      const agent = await bed.agent({ ips: ['10.0.5.1'] });
      await waitFor(
        () =>
          new RegExp(
            `^ADDED\\s+${name}\\s+10\\.0\\.5\\.1\\s+True\\s+<none>\\s+\\w+\\s+web\\s`,
            'm',
          ).test(stdout),
        'the registration to be printed',
        20_000,
      );
      expect(stdout.split('\n')[0]).toMatch(
        /^EVENT\s+NAME\s+ADDRESS\s+CONNECTED\s+HEALTHY\s+ROUTABLE\s+GROUP\s+AGE$/,
      );

      await agent.stop();
      await waitFor(
        () => new RegExp(`^MODIFIED\\s+${name}\\s+10\\.0\\.5\\.1\\s+False\\s`, 'm').test(stdout),
        'the disconnect to be printed',
        20_000,
      );

      expect((await bed.cli(['delete', 'we', name, '-n', 'shop'])).code).toBe(0);
      await waitFor(
        () => new RegExp(`^DELETED\\s+${name}\\s`, 'm').test(stdout),
        'the deletion to be printed',
        20_000,
      );
    } finally {
      child.kill('SIGINT');
    }
    // As a shell reports a process that Ctrl-C stopped: 130, and nothing on stderr.
    expect(await exited).toEqual({ code: 130, signal: null });
    expect(stderr).toBe('');
  });
  it('stops quietly when the pipe it writes to closes (| head), exit 141', async () => {
    await bed.registry.applyEntry({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: 'piped', namespace: 'shop' },
      spec: { address: '10.0.8.1' },
    });
    const child = spawn(
      process.execPath,
      [
        join(process.cwd(), 'bin', 'registrar.js'),
        'get',
        'we',
        '-n',
        'shop',
        '-w',
        '--watch-interval',
        '100ms',
      ],
      { cwd: root, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    );
    // Read the first chunk, then close the reading end, as `head -1` does.
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy();
    // Changes until one is written into the closed pipe.
    let round = 0;
    const applying: Promise<unknown>[] = [];
    const changing = setInterval(() => {
      applying.push(
        bed.registry.applyEntry({
          apiVersion: 'networking.istio.io/v1',
          kind: 'WorkloadEntry',
          metadata: { name: 'piped', namespace: 'shop', labels: { round: String(++round) } },
          spec: { address: '10.0.8.1' },
        }),
      );
    }, 200);
    try {
      expect(await exited).toBe(141);
    } finally {
      clearInterval(changing);
      child.kill();
      // An apply still in flight would write the entry again after its delete, into the next
      // test's list (it did once, with a core busy beside the run).
      await Promise.allSettled(applying);
    }
    expect(stderr).toBe('');
    await bed.registry.deleteEntry({ namespace: 'shop', name: 'piped' });
  });
});

describe('registrar get --watch, in-process', () => {
  function watch(args: string[]) {
    const stop = new AbortController();
    const output = { stdout: '', stderr: '' };
    const done = runCli(args, {
      stdout: { write: (text: string) => (output.stdout += text) },
      stderr: { write: (text: string) => (output.stderr += text) },
      stdin: Readable.from(['']),
      env: {
        REGISTRAR_DYNAMODB_ENDPOINT: bed.runtime.dynamoDbEndpoint,
        REGISTRAR_TABLE: bed.runtime.tableName,
      },
      cwd: root,
      signal: stop.signal,
    });
    return {
      output,
      lines: () => output.stdout.split('\n').filter(Boolean),
      stop: async (reason: NodeJS.Signals = 'SIGINT') => {
        stop.abort(reason);
        return done;
      },
    };
  }

  it('prints the current list, then a row per change, as kubectl get -w does', async () => {
    const first = await bed.agent({ ips: ['10.0.6.1'] });
    await waitFor(
      async () => (await bed.entry(entryName('web', '10.0.6.1')))?.connected,
      'the first VM',
    );
    const watching = watch(['get', 'we', '-n', 'shop', '-w', '--watch-interval', '100ms']);
    await waitFor(() => watching.lines().length >= 2, 'the current list');
    expect(watching.lines()[0]).toMatch(
      /^NAME\s+ADDRESS\s+CONNECTED\s+HEALTHY\s+ROUTABLE\s+GROUP\s+AGE$/,
    );
    expect(watching.lines()[1]).toMatch(/^web-10\.0\.6\.1\s+10\.0\.6\.1\s+True\s/);

    const second = await bed.agent({ ips: ['10.0.6.2'] });
    await waitFor(() => watching.lines().length >= 3, 'the second VM');
    expect(watching.lines()[2]).toMatch(
      /^web-10\.0\.6\.2\s+10\.0\.6\.2\s+True\s+<none>\s+\w+\s+web\s/,
    );
    await first.stop();
    await waitFor(() => watching.lines().length >= 4, 'the first VM leaving');
    expect(watching.lines()[3]).toMatch(/^web-10\.0\.6\.1\s+10\.0\.6\.1\s+False\s/);

    // Rows line up under the first table's columns; the header is printed once.
    const column = (line: string | undefined) => line?.indexOf('True') ?? -1;
    expect(column(watching.lines()[2])).toBe(column(watching.lines()[1]));
    expect(await watching.stop()).toBe(130);
    expect(watching.lines().filter((line) => line.startsWith('NAME'))).toHaveLength(1);
    expect(watching.output.stderr).toBe('');
    await second.stop();
  });

  it('--watch-only skips the current list, -l filters the changes, and SIGTERM exits 143', async () => {
    const handMade = (name: string, app: string, round: number) =>
      bed.registry.applyEntry({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: {
          name,
          namespace: 'shop',
          labels: { app },
          annotations: { round: String(round) },
        },
        spec: { address: '10.0.7.1' },
      });
    await handMade('hand-a', 'web', 0);
    await handMade('hand-b', 'web', 0);
    await handMade('hand-c', 'db', 0);
    const watching = watch([
      'get',
      'we',
      '-n',
      'shop',
      '--watch-only',
      '-l',
      'app=web',
      '-o',
      'name',
      '--watch-interval',
      '100ms',
    ]);
    // Change hand-a and hand-c until a change lands after the watch's first read (which is
    // not observable from here): hand-b never changes, so it shows only if the list did.
    let round = 0;
    await waitFor(
      async () => {
        round++;
        await handMade('hand-a', 'web', round);
        await handMade('hand-c', 'db', round);
        await new Promise((resolve) => setTimeout(resolve, 200));
        return watching.output.stdout !== '';
      },
      'a change of hand-a',
      20_000,
    );
    expect(await watching.stop('SIGTERM')).toBe(143);
    expect(new Set(watching.lines())).toEqual(
      new Set(['workloadentry.networking.istio.io/hand-a']),
    );
  });

  it('refuses to watch a name that is not there, as get does', async () => {
    const watching = watch(['get', 'we', 'web-10.9.9.9', '-n', 'shop', '-w']);
    expect(await watching.stop()).toBe(1);
    expect(watching.output.stderr).toBe(
      'error: workloadentries "web-10.9.9.9" not found in namespace "shop"\n',
    );
  });
});
