import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClusterSkip } from '../fixtures/real-cluster-binaries.ts';
import {
  ADDRESS,
  ISTIOD_CLEANUP_EVERY_MS,
  type MeshBed,
  NS,
  OTHER_ADDRESS,
  startMeshBed,
} from '../fixtures/real-mesh-bed.ts';
import type { TestClient } from '../fixtures/websocket-client.ts';

/**
 * Routing truth judged by a REAL istiod (pilot-discovery of the pinned istio.io/istio module),
 * beside a REAL kube-apiserver, with `npm start --kubeconfig` projecting what real WebSocket
 * clients register (test/fixtures/real-mesh-bed.ts). "Routed" is istiod's own endpoint index
 * for a ServiceEntry selecting the VMs' labels, not a rule re-implemented here.
 *
 * istiod's auto-registration controller runs on every replica and, every 10 x
 * PILOT_WORKLOAD_ENTRY_GRACE_PERIOD, cleans every WorkloadEntry it takes for its own. Its
 * timers are scaled down here (grace 500 ms: a cleanup every 5 s; keepalive max connection age
 * 1 s: "stale" after 1.5 s), so seconds show what Helm's defaults show after 100 s and 45
 * minutes. Each wait for a cleanup is proven by every replica cleaning an entry of its own
 * kind. The registrar's grace is scaled from 5 min to 30 s, so a test can watch all of it.
 */

const skipped = realClusterSkip();
const GRACE_MS = 30_000;

interface Sample {
  /** Every replica routes to the address. */
  routed: boolean;
  /** No replica routes to it. */
  unrouted: boolean;
  uid: string | undefined;
}

/** Samples every istiod's answer and the object's uid until `stop` is called. */
function sampler(bed: MeshBed, address: string) {
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const [views, entry] = await Promise.all([bed.views(address), bed.entry(address)]);
      samples.push({
        routed: views.every(Boolean),
        unrouted: !views.some(Boolean),
        uid: entry?.metadata.uid,
      });
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}

async function holders(bed: MeshBed, address: string): Promise<number> {
  const entry = await bed.store.getEntry({ namespace: NS, name: `web-${address}` });
  return entry?.connection?.connectionIds?.length ?? 0;
}

async function untilHolders(bed: MeshBed, address: string, count: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((await holders(bed, address)) !== count) {
    if (Date.now() > deadline) throw new Error(`the entry never had ${count} holder(s)`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(skipped).each([1, 2])('beside %i real istiod replica(s)', (replicas) => {
  let bed: MeshBed;
  let live: TestClient;

  beforeAll(async () => {
    bed = await startMeshBed(replicas, GRACE_MS);
  }, 300_000);
  afterAll(async () => {
    await bed?.close();
  }, 60_000);

  it('a live VM is routed, and stays the same routed object across istiod cleanup cycles', async () => {
    live = await bed.vm();
    await bed.untilRouted(true);
    const uid = (await bed.entry())?.metadata.uid;
    expect(uid).toBeDefined();

    // Past istiod's stale age (1.5 x 1 s) at once, and three cleanups of every replica.
    const watch = sampler(bed, ADDRESS);
    for (let cycle = 0; cycle < 3; cycle++) await bed.istiodCleanupCycle();
    const samples = await watch.stop();

    expect(samples.length).toBeGreaterThan(20);
    expect(samples.filter((s) => !s.routed)).toEqual([]);
    expect(new Set(samples.map((s) => s.uid))).toEqual(new Set([uid]));
  }, 120_000);

  it('a make-before-break rotation never takes the VM out of istiod endpoints', async () => {
    const uid = (await bed.entry())?.metadata.uid;
    const watch = sampler(bed, ADDRESS);
    const replacement = await bed.vm();
    // The new connection holds the entry before the old one leaves.
    await untilHolders(bed, ADDRESS, 2);
    await live.close(1000, 'replaced');
    live = replacement;
    await untilHolders(bed, ADDRESS, 1);
    // A whole cleanup of every replica after the old connection left: a blip would show by now.
    await bed.istiodCleanupCycle();
    const samples = await watch.stop();

    expect(samples.length).toBeGreaterThan(ISTIOD_CLEANUP_EVERY_MS / 500);
    expect(samples.filter((s) => !s.routed)).toEqual([]);
    expect(new Set(samples.map((s) => s.uid))).toEqual(new Set([uid]));
  }, 60_000);

  it('a VM that reconnects within the grace is routed again as the same object', async () => {
    const before = await bed.entry();
    live.socket.terminate(); // no close frame: the TCP connection just ends, as in a crash
    await bed.untilRouted(false);
    await bed.istiodCleanupCycle();
    live = await bed.vm();
    const tookMs = await bed.untilRouted(true);
    expect(tookMs).toBeLessThan(10_000);
    expect((await bed.entry())?.metadata.uid).toBe(before?.metadata.uid);
  }, 60_000);

  it('a crashed VM is out of istiod endpoints within seconds, and kept, same uid, for the whole grace', async () => {
    const crashing = await bed.vm(OTHER_ADDRESS);
    await bed.untilRouted(true, OTHER_ADDRESS);
    const before = await bed.entry(OTHER_ADDRESS);

    crashing.socket.terminate(); // no close frame: the TCP connection just ends, as in a crash
    const crashedAt = Date.now();
    const tookMs = await bed.untilRouted(false, OTHER_ADDRESS);
    // istiod's own bar for its auto-registered entries is its 10 s grace.
    expect(tookMs).toBeLessThan(10_000);

    // Until the registrar's grace ends (its sweeper may delete the entry from then on), through
    // several cleanups of every replica: out of traffic, and the same object.
    const watch = sampler(bed, OTHER_ADDRESS);
    let cycles = 0;
    while (Date.now() - crashedAt < GRACE_MS - ISTIOD_CLEANUP_EVERY_MS - 5_000) {
      await bed.istiodCleanupCycle();
      cycles++;
    }
    while (Date.now() - crashedAt < GRACE_MS - 1_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const samples = await watch.stop();

    expect(cycles).toBeGreaterThanOrEqual(2);
    expect(samples.filter((s) => !s.unrouted)).toEqual([]);
    expect(new Set(samples.map((s) => s.uid))).toEqual(new Set([before?.metadata.uid]));
    const kept = await bed.entry(OTHER_ADDRESS);
    expect(kept?.metadata.uid).toBe(before?.metadata.uid);
    expect(kept?.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Healthy', status: 'False', reason: 'Disconnected' }),
    );
  }, 120_000);
});
