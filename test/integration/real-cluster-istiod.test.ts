import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClusterSkip } from '../fixtures/real-cluster-binaries.ts';
import {
  ADDRESS,
  ISTIOD_CLEANUP_EVERY_MS,
  type MeshBed,
  startMeshBed,
} from '../fixtures/real-mesh-bed.ts';
import type { TestClient } from '../fixtures/websocket-client.ts';

/**
 * Routing truth judged by a REAL istiod (pilot-discovery of the pinned istio.io/istio module),
 * beside a REAL kube-apiserver, with `npm start --kubeconfig` projecting what real WebSocket
 * clients register (test/fixtures/real-mesh-bed.ts). "Routed" is istiod's own endpoint index
 * for a ServiceEntry selecting the VM's labels, not a rule re-implemented here.
 *
 * istiod's auto-registration controller runs on every replica and, every 10 x
 * PILOT_WORKLOAD_ENTRY_GRACE_PERIOD, cleans every WorkloadEntry it takes for its own. Its
 * timers are scaled down here (grace 500 ms: a cleanup every 5 s; keepalive max connection age
 * 1 s: "stale" after 1.5 s), so a few seconds show what Helm's defaults show after 10 s and
 * 45 minutes. Each wait for a cleanup cycle is proven by istiod deleting an entry of its own.
 */

const skipped = realClusterSkip();

interface Sample {
  routed: boolean;
  uid: string | undefined;
}

/** Samples istiod's answer and the object's uid until `stop` is called. */
function sampler(bed: MeshBed) {
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const [routed, entry] = await Promise.all([bed.routed(), bed.entry()]);
      samples.push({ routed, uid: entry?.metadata.uid });
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return {
    samples,
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}

describe.skipIf(skipped).each([1, 2])('beside %i real istiod replica(s)', (replicas) => {
  let bed: MeshBed;
  let live: TestClient;

  beforeAll(async () => {
    bed = await startMeshBed(replicas);
  }, 300_000);
  afterAll(async () => {
    await bed?.close();
  }, 60_000);

  it('a live VM is routed, and stays the same routed object across istiod cleanup cycles', async () => {
    live = await bed.vm();
    await bed.untilRouted(true);
    const uid = (await bed.entry())?.metadata.uid;
    expect(uid).toBeDefined();

    // Past istiod's stale age (1.5 x 1 s) at once, and three of its cleanups.
    const watch = sampler(bed);
    for (let cycle = 0; cycle < 3; cycle++) await bed.istiodCleanupCycle();
    const samples = await watch.stop();

    expect(samples.length).toBeGreaterThan(20);
    expect(samples.filter((s) => !s.routed)).toEqual([]);
    expect(new Set(samples.map((s) => s.uid))).toEqual(new Set([uid]));
  }, 120_000);

  it('a crashed VM is out of istiod endpoints within seconds, and kept, same uid, across its cleanup cycles', async () => {
    const before = await bed.entry();
    live.socket.terminate(); // no close frame: the TCP connection just ends, as in a crash
    const tookMs = await bed.untilRouted(false);
    // istiod's own bar for its auto-registered entries is its 10 s grace.
    expect(tookMs).toBeLessThan(10_000);

    const watch = sampler(bed);
    for (let cycle = 0; cycle < 2; cycle++) await bed.istiodCleanupCycle();
    const samples = await watch.stop();

    // Kept for the registrar's grace (5 min): the object, with its uid, outlives istiod's.
    expect(samples.filter((s) => s.routed)).toEqual([]);
    expect(new Set(samples.map((s) => s.uid))).toEqual(new Set([before?.metadata.uid]));
    const kept = await bed.entry();
    expect(kept?.metadata.uid).toBe(before?.metadata.uid);
    expect(kept?.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Healthy', status: 'False', reason: 'Disconnected' }),
    );
  }, 120_000);

  it('a VM that reconnects within the grace is routed again as the same object', async () => {
    const before = await bed.entry();
    live = await bed.vm();
    const tookMs = await bed.untilRouted(true);
    expect(tookMs).toBeLessThan(10_000);
    expect((await bed.entry())?.metadata.uid).toBe(before?.metadata.uid);
  }, 60_000);

  it('a make-before-break rotation never takes the VM out of istiod endpoints', async () => {
    await bed.untilRouted(true);
    const uid = (await bed.entry())?.metadata.uid;
    const watch = sampler(bed);
    const replacement = await bed.vm();
    // The new connection holds the entry before the old one leaves.
    const key = { namespace: 'shop', name: `web-${ADDRESS}` };
    const deadline = Date.now() + 20_000;
    while (((await bed.store.getEntry(key))?.connection?.connectionIds ?? []).length < 2) {
      if (Date.now() > deadline) throw new Error('the replacement never held the entry');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await live.close(1000, 'replaced');
    live = replacement;
    while (((await bed.store.getEntry(key))?.connection?.connectionIds ?? []).length !== 1) {
      if (Date.now() > deadline) throw new Error('the old connection never let go');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // A whole istiod cleanup cycle after the old connection left: a blip would show by now.
    await bed.istiodCleanupCycle();
    const samples = await watch.stop();

    expect(samples.length).toBeGreaterThan(ISTIOD_CLEANUP_EVERY_MS / 500);
    expect(samples.filter((s) => !s.routed)).toEqual([]);
    expect(new Set(samples.map((s) => s.uid))).toEqual(new Set([uid]));
  }, 60_000);
});
