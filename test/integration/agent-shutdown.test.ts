import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * `registrar-agent` as systemd runs it: a process, stopped with SIGTERM. Both the TypeScript
 * sources (`npx registrar-agent`) and the single-file bundle that packaging/build-agent.sh
 * makes for VMs.
 */
let bed: AgentTestbed;
let bundleDir: string;

beforeAll(async () => {
  bed = await startAgentTestbed();
  await bed.applyGroup('web');
  bundleDir = mkdtempSync(join(tmpdir(), 'agent-bundle-'));
  execFileSync('sh', ['packaging/build-agent.sh'], {
    env: { ...process.env, OUT_DIR: bundleDir },
    stdio: 'ignore',
  });
});
afterAll(async () => {
  await bed?.close();
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});

function runAgent(program: string, signal: NodeJS.Signals, ip: string, drainDelay = '200ms') {
  const child = spawn(
    process.execPath,
    [
      program,
      '--drain-delay',
      drainDelay,
      '--url',
      bed.runtime.url,
      '--group',
      'web',
      '--namespace',
      'shop',
      '--ip',
      ip,
      '--no-imds',
      '--log-format',
      'json',
    ],
    {
      env: { ...process.env, REGISTRAR_AGENT_TOKEN: bed.token },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return { child, exited, output: () => output, signal };
}

describe('registrar-agent process', () => {
  it.each([
    ['SIGTERM', 'the sources', '10.0.4.1'],
    ['SIGINT', 'the sources', '10.0.4.2'],
    ['SIGTERM', 'the bundle', '10.0.4.3'],
  ] as const)('closes the connection cleanly on %s and exits 0 (%s)', async (signal, kind, ip) => {
    const program =
      kind === 'the bundle' ? join(bundleDir, 'registrar-agent.mjs') : 'bin/registrar-agent.js';
    const agent = runAgent(program, signal, ip);
    await waitFor(
      () => agent.output().includes(`registered as shop/web-${ip}`),
      'the agent to register',
      20_000,
    );
    expect((await bed.entry(`web-${ip}`))?.connected).toBe(true);
    agent.child.kill(signal);
    expect(await agent.exited).toBe(0);
    // The server ran $disconnect: the entry is marked disconnected, not left connected.
    await waitFor(
      async () => (await bed.entry(`web-${ip}`))?.connected === false,
      'the entry to be disconnected',
    );
    const disconnectedAt = (await bed.entry(`web-${ip}`))?.we.metadata.annotations?.[
      'istio.io/disconnectedAt'
    ];
    expect(disconnectedAt).toBeDefined();
    const lines = agent
      .output()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: string; msg: string });
    expect(lines.map((line) => line.msg)).toEqual(
      expect.arrayContaining([
        'connected',
        `registered as shop/web-${ip}`,
        `${signal} received; draining, then closing the connection`,
        'stopped',
      ]),
    );
  });

  it('closes at once on a second SIGTERM during the drain delay, still cleanly', async () => {
    const ip = '10.0.4.4';
    const agent = runAgent('bin/registrar-agent.js', 'SIGTERM', ip, '10m');
    await waitFor(
      () => agent.output().includes(`registered as shop/web-${ip}`),
      'the agent to register',
      20_000,
    );
    agent.child.kill('SIGTERM');
    // The drain was answered (or refused as unknown): the agent now waits the 10-minute delay.
    await waitFor(() => /closing in 600\.0 s/.test(agent.output()), 'the drain delay to begin');
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    await waitFor(
      async () => (await bed.entry(`web-${ip}`))?.connected === false,
      'the entry to be disconnected',
    );
    expect(agent.output()).toContain('SIGTERM received again; closing the connection now');
  });
});
