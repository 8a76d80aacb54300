import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type EntryRecord, renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
import type { WorkloadEntry } from '../../lib/domain/model.ts';
import type { Cluster, ClusterWatch } from '../../lib/projection/cluster.ts';
import {
  clusterAnnotations,
  REGISTRAR_ANNOTATIONS,
} from '../../lib/projection/istiod-coexistence.ts';
import { createKubernetesCluster } from '../../lib/projection/kubernetes-cluster.ts';
import { type KubeObject, sameList, sameMap } from '../../lib/projection/objects.ts';
import { reconcile } from '../../lib/projection/projector.ts';
import type { ProjectionReport } from '../../lib/projection/report.ts';
import { istiodRoutesTo } from '../fixtures/istio-routing-rule.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import {
  type EntryOptions,
  entryRecord,
  MemoryCatalog,
  T0,
} from '../fixtures/projection-records.ts';

/**
 * The projector writes a WorkloadEntry in two requests: the object (labels, annotations, spec)
 * and its status subresource (the `Healthy` condition). Here exactly the status write fails:
 * a FAULT INJECTED AT THE API SERVER BOUNDARY (the kube-apiserver STAND-IN's `failWrite`
 * answers every `PUT .../workloadentries/<name>/status` with 503; the projector and
 * @kubernetes/client-node are the real ones, unchanged). istiod is played by a watch on
 * WorkloadEntries through the same client, which judges EVERY version it is sent with istiod's
 * own rule (test/fixtures/istio-routing-rule.ts), so a version that lived for a millisecond
 * between two writes is judged too. The projector runs as a loop (reconcile after reconcile)
 * while the fault lasts, and the fault is lifted to show the next reconciles repair it.
 */

const NS = 'shop';
const NAME = 'vm-a';

let api: KubeApiServerStandIn;
let cluster: Cluster;
let catalog: MemoryCatalog;
let watching: Promise<ClusterWatch> | undefined;
let projector: ProjectorLoop | undefined;
/** Every version of the entry the watch delivered, in order (DELETED: istiod forgets it). */
let seen: { type: string; object: KubeObject }[];
/** Status writes the injected fault refused. */
let refusedStatusWrites: number;
let statusWritesFail: boolean;

beforeEach(async () => {
  api = await startKubeApiServerStandIn();
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  cluster = createKubernetesCluster(config);
  catalog = new MemoryCatalog();
  seen = [];
  refusedStatusWrites = 0;
  statusWritesFail = false;
  api.failWrite = (write) => {
    if (!statusWritesFail || write.kind !== 'WorkloadEntry' || write.subresource !== 'status')
      return undefined;
    refusedStatusWrites += 1;
    return 503;
  };
  // Not awaited: the stand-in answers a watch's headers with its first event.
  watching = cluster.watch?.('WorkloadEntry', { namespace: NS }, (event) => {
    if (event.object.metadata.name === NAME) seen.push(event);
  });
  await until('the watch to be open', () => api.watchCount() > 0);
});

afterEach(async () => {
  await projector?.stop();
  projector = undefined;
  api.dropWatches();
  await watching?.then(
    (open) => open.stop(),
    () => undefined,
  );
  await api.close();
});

interface ProjectorLoop {
  rounds(): number;
  reports: ProjectionReport[];
  stop(): Promise<void>;
}

/** The projector as the local runtime runs it: one full reconcile after another. */
function startProjector(): ProjectorLoop {
  const reports: ProjectionReport[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      reports.push(await reconcile({ store: catalog, cluster }, { targets: ['istio'] }));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    rounds: () => reports.length,
    reports,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function stored(): KubeObject | undefined {
  return api.object('WorkloadEntry', NS, NAME);
}

/** What istiod does with one delivered version: a deleted entry gets no traffic. */
function routes(event: { type: string; object: KubeObject }): boolean {
  return event.type !== 'DELETED' && istiodRoutesTo(event.object as unknown as WorkloadEntry);
}

/** Waits until the watch (istiod) has been sent the version the API server stores now. */
async function watchCaughtUp(): Promise<void> {
  await until('the watch to deliver the stored version', () => {
    const last = seen.at(-1);
    const current = stored();
    return current === undefined
      ? last?.type === 'DELETED'
      : last?.object.metadata.resourceVersion === current.metadata.resourceVersion;
  });
}

/** The projected object carries what the registry renders: annotations and conditions. */
function converged(record: EntryRecord): boolean {
  const object = stored();
  const rendered = renderWorkloadEntry(record);
  return (
    object !== undefined &&
    sameMap(object.metadata.annotations, clusterAnnotations(rendered.metadata.annotations)) &&
    sameList(object.status?.conditions, rendered.status?.conditions)
  );
}

/** Lets the projector run this many rounds with the status write failing, then stops it. */
async function whileStatusWritesFail(
  rounds: number,
): Promise<{ type: string; object: KubeObject }[]> {
  const from = seen.length;
  statusWritesFail = true;
  projector = startProjector();
  const start = projector.rounds();
  await until(
    `${rounds} reconciles with the status write failing`,
    () => projector !== undefined && projector.rounds() >= start + rounds,
  );
  await projector.stop();
  projector = undefined;
  await watchCaughtUp();
  return seen.slice(from);
}

/** Lifts the fault and waits, with the projector running, until it wrote what is rendered. */
async function afterTheFaultIsLifted(record: EntryRecord): Promise<KubeObject> {
  statusWritesFail = false;
  projector = startProjector();
  await until('the projection to converge once status writes succeed', () => converged(record));
  await projector.stop();
  projector = undefined;
  await watchCaughtUp();
  return stored() as KubeObject;
}

/** The entry projected without any fault, as it was before the story's step. */
async function projectedWithoutFault(record: EntryRecord): Promise<KubeObject> {
  catalog.set(record);
  return afterTheFaultIsLifted(record);
}

/** health-checks-enabled on every version: istiod routes only on `Healthy: True`. */
const PROBED: EntryOptions = {
  healthChecksEnabled: true,
  health: { status: 'True', at: T0 + 500 },
};
/** The agent sends no health: routable while connected, the annotation only when not. */
const UNPROBED: EntryOptions = { healthChecksEnabled: false };

const GROUPS = [
  { group: 'a group with a probe', options: PROBED },
  { group: 'a group without a probe', options: UNPROBED },
];

const connected = (options: EntryOptions, at = T0) =>
  entryRecord(NAME, { ...options, connectedAt: at });
const crashed = (options: EntryOptions) =>
  entryRecord(NAME, { ...options, disconnectedAt: T0 + 60_000 });

describe.each(GROUPS)(
  'the status write fails (an injected API fault), $group',
  ({ group, options }) => {
    const probed = group === 'a group with a probe';

    it(
      probed
        ? 'a new entry of a connected healthy VM is not routed to until its status lands, then is'
        : 'a new entry of a connected VM is routed to at once (its object alone allows it)',
      async () => {
        const record = connected(options);
        catalog.set(record);

        const during = await whileStatusWritesFail(3);

        expect(during.length).toBeGreaterThan(0);
        // With a probe, the object says `health-checks-enabled` and no `Healthy: True` exists yet:
        // a brand-new VM waits for its status (the safe side costs it its first seconds). Without
        // a probe no status is needed, so the fault does not touch it.
        expect(during.map(routes)).toEqual(during.map(() => !probed));
        if (probed) expect(refusedStatusWrites).toBeGreaterThanOrEqual(3);
        else expect(refusedStatusWrites).toBe(0);

        const after = await afterTheFaultIsLifted(record);
        expect(istiodRoutesTo(after as unknown as WorkloadEntry)).toBe(true);
      },
    );

    it('a VM that just crashed is never routed to while its status write fails, and converges after', async () => {
      const before = await projectedWithoutFault(connected(options));
      expect(istiodRoutesTo(before as unknown as WorkloadEntry)).toBe(true);
      const record = crashed(options);
      catalog.set(record);

      const during = await whileStatusWritesFail(3);

      expect(refusedStatusWrites).toBeGreaterThanOrEqual(1);
      // What istiod holds at the end of the fault (the last version it was sent: the one from
      // before the crash if nothing new landed): out of traffic.
      expect(routes(seen.at(-1) as { type: string; object: KubeObject })).toBe(false);
      // Every version istiod was sent after the crash: none routable, not even for a moment.
      expect(during.length).toBeGreaterThan(0);
      expect(during.filter(routes)).toEqual([]);

      const after = await afterTheFaultIsLifted(record);
      expect(istiodRoutesTo(after as unknown as WorkloadEntry)).toBe(false);
      expect(after.status?.conditions?.find((c) => c.type === 'Healthy')).toMatchObject({
        status: 'False',
        reason: 'Disconnected',
      });
      if (!probed) {
        // The object's annotation alone took it out: kept, same uid, no fail-safe delete needed.
        expect(after.metadata.uid).toBe(before.metadata.uid);
      }
    });

    it(
      probed
        ? 'a VM that reconnects stays out of traffic until its status says True again, then is routed to'
        : 'a VM that reconnects is routed to again as soon as its object says connected',
      async () => {
        const first = await projectedWithoutFault(connected(options));
        await projectedWithoutFault(crashed(options));
        const record = connected(options, T0 + 120_000);
        catalog.set(record);

        const during = await whileStatusWritesFail(3);

        expect(refusedStatusWrites).toBeGreaterThanOrEqual(1);
        if (probed) {
          // The stored status still says False (Disconnected): istiod waits for it to turn True.
          expect(during.filter(routes)).toEqual([]);
        } else {
          // No probe: the object write drops the annotation and istiod routes; the stale
          // `Healthy: False` left in the status is not read without the annotation.
          expect(during.length).toBeGreaterThan(0);
          expect(routes(during.at(-1) as { type: string; object: KubeObject })).toBe(true);
        }

        const after = await afterTheFaultIsLifted(record);
        expect(istiodRoutesTo(after as unknown as WorkloadEntry)).toBe(true);
        // The reconnect found the same entry: kept, never re-created.
        expect(after.metadata.uid).toBe(first.metadata.uid);
      },
    );
  },
);

describe('the fail-safe when a status that takes an entry out of traffic cannot be written', () => {
  it('deletes the object (preconditioned) and reports why; the next reconcile creates it again', async () => {
    await projectedWithoutFault(connected(PROBED));
    catalog.set(crashed(PROBED));
    statusWritesFail = true;

    const report = await reconcile({ store: catalog, cluster }, { targets: ['istio'] });

    expect(report.changes).toEqual([
      { kind: 'WorkloadEntry', action: 'deleted', namespace: NS, name: NAME },
    ]);
    expect(report.errors).toHaveLength(1);
    expect(report.errors[0]?.message).toMatch(
      /503 ServiceUnavailable.*could not be written, so the object was deleted \(the next reconcile creates it again\)$/,
    );
    expect(stored()).toBeUndefined();

    const next = await reconcile({ store: catalog, cluster }, { targets: ['istio'] });
    expect(next.changes.map((c) => c.action)).toEqual(['created']);
    const recreated = stored();
    expect(recreated?.metadata.annotations?.[REGISTRAR_ANNOTATIONS.disconnectedAt]).toBeDefined();
    expect(istiodRoutesTo(recreated as unknown as WorkloadEntry)).toBe(false);
  });
});
