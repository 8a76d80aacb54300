import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import {
  type RuntimeProcess,
  spawnRuntime,
  startRuntimeProcess,
} from '../fixtures/local-runtime-process.ts';

/**
 * `npm start --kubeconfig` when the cluster is not there: one line naming the cluster and the
 * cause, not one per 10 s loop and not silence, then one line when it comes back. The runtime
 * is a real process; the cluster is the kube-apiserver STAND-IN (no real API server runs
 * here), reached through a TCP gate this test opens.
 */
let dir: string;
let runtime: RuntimeProcess | undefined;
let api: KubeApiServerStandIn | undefined;
let gate: Server | undefined;
const sockets = new Set<Socket>();

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'projection-console-'));
});
afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => (gate ? gate.close(resolve) : resolve(undefined)));
  gate = undefined;
  await api?.close();
  api = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A port nothing listens on now (listened on, then closed). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Opens `port` and forwards it to the stand-in: the cluster comes back. */
async function openGate(port: number, to: string): Promise<void> {
  const target = new URL(to);
  gate = createServer((socket) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(socket).add(upstream);
    socket.pipe(upstream).pipe(socket);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => gate?.listen(port, '127.0.0.1', resolve));
}

const lines = (output: string, pattern: RegExp) =>
  output.split('\n').filter((line) => pattern.test(line));

describe('projection on the local console', () => {
  it('tells an unreachable cluster once, with the cause, and its return once', async () => {
    api = await startKubeApiServerStandIn();
    const port = await freePort();
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, api.kubeconfig.replace(api.url, `http://127.0.0.1:${port}`));

    runtime = await startRuntimeProcess([
      '--memory',
      '--kubeconfig',
      kubeconfig,
      '--projection-interval',
      '200ms',
    ]);
    expect(runtime.stdout()).toContain(
      `  projection:       istio into cluster stand-in (http://127.0.0.1:${port}), context stand-in of ${kubeconfig}`,
    );
    const failing = new RegExp(
      `^\\d\\d:\\d\\d:\\d\\d projection into cluster stand-in \\(http://127\\.0\\.0\\.1:${port}\\) failing: list WorkloadEntry: fetch failed \\(connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)$`,
    );
    await runtime.waitForOutput(new RegExp(failing.source, 'm'));
    // Several more loops (every 200 ms) fail the same way: still one line.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(lines(runtime.stdout(), failing)).toHaveLength(1);

    await openGate(port, api.url);
    await runtime.waitForOutput(/projection into cluster stand-in \(\S+\) recovered$/m);
    expect(lines(runtime.stdout(), /recovered$/)).toHaveLength(1);
    expect(lines(runtime.stdout(), /failing/)).toHaveLength(1);
    expect(runtime.stderr()).toBe('');
  });

  it('refuses to start with a --context the kubeconfig lacks, naming it and the contexts', async () => {
    api = await startKubeApiServerStandIn();
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, api.kubeconfig);
    const started = spawnRuntime(['--memory', '--kubeconfig', kubeconfig, '--context', 'prod']);
    expect(await started.exited).toBe(1);
    expect(started.stderr()).toBe(
      `registrar: failed to start: --context 'prod' is not in kubeconfig ${kubeconfig} (contexts: stand-in)\n`,
    );
    runtime = started;
  });

  it('finds the cluster through KUBECONFIG with --project', async () => {
    api = await startKubeApiServerStandIn();
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, api.kubeconfig);
    runtime = await startRuntimeProcess(['--memory', '--project'], {
      KUBECONFIG: `${join(dir, 'missing')}:${kubeconfig}`,
    });
    expect(runtime.stdout()).toContain(
      `  projection:       istio into cluster stand-in (${api.url}), context stand-in of ${kubeconfig}`,
    );
    // It reconciles against that cluster: the stand-in is asked for its WorkloadEntries.
    const deadline = Date.now() + 20_000;
    while (api.lists().length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(api.lists().length).toBeGreaterThan(0);
    expect(runtime.stdout()).not.toMatch(/failing/);
  });
});
