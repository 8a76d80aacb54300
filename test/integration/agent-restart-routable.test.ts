import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startLocalRuntime } from '../../infra/local/runtime.ts';
import type { WorkloadEntry } from '../../lib/domain/model.ts';
import {
  type AgentCommand,
  restartAgent,
  spawnAgent,
  stopAllAgents,
} from '../fixtures/agent-restart.ts';
import { startTcpTarget, type TcpTarget, waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, NAMESPACE, testbedFor } from '../fixtures/agent-testbed.ts';
import { istiodRoutesTo } from '../fixtures/istio-routing-rule.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';

/**
 * A planned restart of the real agent (`systemctl restart`: SIGTERM, the agent drains and
 * closes cleanly, then a new process starts and connects) against the local runtime, with
 * the projector writing into the kube-apiserver STAND-IN and the projected WorkloadEntry
 * judged by istiod's rule (test/fixtures/istio-routing-rule.ts). The restart costs
 * routability on purpose (the drain takes the VM out before its process stops: DESIGN,
 * "Routable follows reality", and docs/operations.md, "What the mesh sees when") but never
 * the entry: the same object, the same uid, routable again once the new process holds it
 * (and its probe passed, for a group with one).
 */

/** A loaded 2-core machine: drain 2 s, process exit and start, connect, probe, projection. */
const ROUTABLE_AGAIN_WITHIN_MS = 30_000;
/** The drain delay of the restarted agents: long enough for the projector to act on it. */
const DRAIN_DELAY = '2s';

let api: KubeApiServerStandIn;
let bed: AgentTestbed;
let dir: string;
let probeTarget: TcpTarget;

beforeAll(async () => {
  api = await startKubeApiServerStandIn();
  dir = await mkdtemp(join(tmpdir(), 'agent-restart-'));
  await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
  probeTarget = await startTcpTarget();
  const runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    dataDir: dir,
    kubeconfig: join(dir, 'kubeconfig'),
    projectionIntervalMs: 100,
    // Nothing is swept during the story: kept is about the restart, not the grace period.
    sweepIntervalMs: 3_600_000,
    gracePeriodMs: 3_600_000,
    logLevel: 'SILENT',
    functionEnv: { REGISTRAR_GROUP_CACHE_TTL: '0s' },
  });
  bed = await testbedFor(runtime);
  await bed.applyGroup('web');
  await bed.applyGroup('api', {
    tcpSocket: { port: probeTarget.port, host: '127.0.0.1' },
    periodSeconds: 1,
    successThreshold: 1,
    failureThreshold: 1,
  });
});

afterAll(async () => {
  // Every agent process, even when a test failed half-way; then the servers and the files.
  await stopAllAgents();
  await bed?.close();
  await api?.close();
  await probeTarget?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function projected(name: string): WorkloadEntry | undefined {
  return api.object('WorkloadEntry', NAMESPACE, name) as unknown as WorkloadEntry | undefined;
}

describe.each([
  { group: 'api', ip: '10.0.7.1', kind: 'a group with a probe' },
  { group: 'web', ip: '10.0.7.2', kind: 'a group without a probe' },
])('a planned agent restart, $kind', ({ group, ip }) => {
  it('keeps the same entry (uid) and is routable again after the new process connects', async () => {
    const name = `${group}-${ip}`;
    const command: AgentCommand = {
      url: bed.runtime.url,
      token: bed.token,
      group,
      namespace: NAMESPACE,
      ip,
      drainDelay: DRAIN_DELAY,
    };
    const first = spawnAgent(command);
    await waitFor(
      () => {
        const entry = projected(name);
        return entry !== undefined && istiodRoutesTo(entry);
      },
      `${name} to be projected and routable`,
      ROUTABLE_AGAIN_WITHIN_MS,
    );
    const registryUid = (await bed.registry.getEntry({ namespace: NAMESPACE, name }))?.entry
      .metadata.uid;

    const { sample, next } = await restartAgent({
      command,
      current: first,
      projected: () => projected(name),
      timeoutMs: ROUTABLE_AGAIN_WITHIN_MS,
    });

    // The old process stopped as systemd asks: drained, closed cleanly, exit 0.
    expect(sample.exitCode).toBe(0);
    expect(sample.drainAckedMs).toBeDefined();
    // Out of traffic on purpose, before the old process went away (the drain's whole point).
    expect(sample.unroutableAtMs).toBeLessThan(sample.exitedMs);
    // Routable again, with the new process's connection, within the bound.
    expect(sample.routableAgainMs).toBeGreaterThan(sample.exitedMs);
    expect(sample.routableAgainMs).toBeLessThan(ROUTABLE_AGAIN_WITHIN_MS);
    // Kept: the cluster's object never went away and is the same one; so is the registry's.
    expect(sample.missingSamples).toBe(0);
    expect(sample.uidKept).toBe(true);
    const record = await bed.registry.getEntry({ namespace: NAMESPACE, name });
    expect(record?.entry.metadata.uid).toBe(registryUid);
    expect(record?.connection?.connectionIds).toHaveLength(1);

    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  }, 90_000);
});
