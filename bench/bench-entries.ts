import { buildRegistration } from '../lib/domain/build-entry.ts';
import { entryOrigin } from '../lib/domain/entry-name.ts';
import type { ObjectRef, WorkloadGroup } from '../lib/domain/model.ts';
import type { RegistrarStore } from '../lib/registrar-store.ts';

/** The group every store-level benchmark registers its VMs in. */
const BENCH_GROUP: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'bench', namespace: 'bench', uid: 'bench-uid' },
  spec: { template: { ports: { http: 8080 } } },
};

/** The address of the i-th benchmark VM (10.x.y.z, unique up to 16 M VMs). */
export function benchIp(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

/**
 * Registers the i-th VM through the store's real connect write, as `$connect` would (the
 * benchmarks measure the store and the sweeper, not the gateway), holding `c<i>`.
 */
export async function connectBenchVm(
  store: RegistrarStore,
  i: number,
  connectedAt: number,
  namespace = 'bench',
  locality?: string,
): Promise<{ entry: ObjectRef; connectionId: string }> {
  const ip = benchIp(i);
  const connectionId = `c${i}`;
  const group = benchGroup(namespace);
  const built = buildRegistration(
    group,
    { group: 'bench', namespace, ips: [ip], labels: {}, ...(locality ? { locality } : {}) },
    connectedAt,
  );
  await store.connect({
    ...built,
    origin: entryOrigin('bench', ip),
    mayCreate: true,
    recordConnection: false,
    groupGeneration: 1,
    connectionId,
    connectedAt,
    controller: 'bench',
    identity: { principal: 'token:bench', namespace },
  });
  return { entry: built.entry.metadata, connectionId };
}

/** The benchmark's group `bench` in a namespace (apply it for `$connect` to find it). */
export function benchGroup(namespace: string): WorkloadGroup {
  return { ...BENCH_GROUP, metadata: { ...BENCH_GROUP.metadata, namespace } };
}

/** Runs `work(i)` for i in [0, count), `width` at a time. */
export async function inBatches(
  count: number,
  width: number,
  work: (i: number) => Promise<unknown>,
): Promise<void> {
  for (let start = 0; start < count; start += width) {
    const jobs: Promise<unknown>[] = [];
    for (let i = start; i < Math.min(count, start + width); i++) jobs.push(work(i));
    await Promise.all(jobs);
  }
}
