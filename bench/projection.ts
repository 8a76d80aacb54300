import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { KubeConfig } from '@kubernetes/client-node';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { createKubernetesCluster } from '../lib/projection/kubernetes-cluster.ts';
import { reconcile } from '../lib/projection/projector.ts';
import type { Target } from '../lib/projection/report.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { itemSize } from '../lib/store/item-size.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { startKubeApiServerStandIn } from '../test/fixtures/kube-apiserver-stand-in.ts';
import { entryRecord, MemoryCatalog, T0 } from '../test/fixtures/projection-records.ts';
import { connectBenchVm, inBatches } from './bench-entries.ts';

/**
 * Reconcile of 10,000 registry entries (istio + endpointslices, 10 namespaces, one Service
 * each) through @kubernetes/client-node against the in-process kube-apiserver STAND-IN: the
 * request counts are what a real API server would see; the times are this machine's.
 */
export async function measureProjection(count = 10_000) {
  const api = await startKubeApiServerStandIn();
  const targets: Target[] = ['istio', 'endpointslices'];
  const namespaces = 10;
  const catalog = new MemoryCatalog();
  for (let i = 0; i < count; i += 1) {
    catalog.set(entryRecord(`vm-${i}`, recordOptions(i, namespaces, T0)));
  }
  for (let n = 0; n < namespaces; n += 1) {
    api.put('Service', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'cart', namespace: `ns-${n}` },
      spec: {
        selector: { app: 'cart' },
        clusterIP: '172.20.0.10',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      },
    });
  }
  const config = new KubeConfig();
  config.loadFromString(api.kubeconfig);
  const cluster = createKubernetesCluster(config);
  const run = async () => {
    api.resetRequests();
    const report = await reconcile({ store: catalog, cluster }, { targets, concurrency: 16 });
    if (report.errors.length > 0) throw new Error(report.errors.map((e) => e.message).join('; '));
    const writes = api.writes().length;
    return {
      requests: api.requests.length,
      lists: api.lists().length,
      writes,
      changes: report.changes.length,
      conflicts: report.conflicts,
      ms: Math.round(report.durationMs),
    };
  };
  try {
    const initial = await run();
    const unchanged = await run();
    // 1% of the entries report a health flip: each changes its WorkloadEntry status and its
    // endpoint's ready condition.
    const changed = Math.floor(count / 100);
    for (let i = 0; i < changed; i += 1) {
      catalog.set(
        entryRecord(`vm-${i * 100}`, {
          ...recordOptions(i * 100, namespaces, T0),
          health: { status: 'False', at: T0 + 60_000 },
        }),
      );
    }
    const onePercent = await run();
    return {
      entries: count,
      targets,
      services: namespaces,
      initialSync: initial,
      nothingChanged: unchanged,
      onePercentChanged: { healthFlips: changed, ...onePercent },
    };
  } finally {
    await api.close();
  }
}

/**
 * A stream batch (the projector's fast path) after `changed` entries of one namespace of
 * `size` changed: the registry reads (entries returned by the store) and Kubernetes requests
 * it makes, per changed entry. Istio target (one object per entry); the same stand-in.
 */
export async function measureStreamProjection(size: number, changed = 10) {
  const api = await startKubeApiServerStandIn();
  try {
    const catalog = new MemoryCatalog();
    for (let i = 0; i < size; i += 1) {
      catalog.set(entryRecord(`vm-${i}`, recordOptions(i, 1, T0)));
    }
    const config = new KubeConfig();
    config.loadFromString(api.kubeconfig);
    const cluster = createKubernetesCluster(config);
    await reconcile({ store: catalog, cluster }, { targets: ['istio'], concurrency: 16 });
    const names: string[] = [];
    for (let k = 0; k < changed; k += 1) {
      const i = Math.floor((k * size) / changed);
      names.push(`vm-${i}`);
      catalog.set(
        entryRecord(`vm-${i}`, {
          ...recordOptions(i, 1, T0),
          health: { status: 'False', at: T0 + 60_000 },
        }),
      );
    }
    api.resetRequests();
    catalog.reads = { listNamespaces: 0, listEntries: 0, getEntry: 0 };
    const report = await reconcile(
      { store: catalog, cluster },
      { targets: ['istio'] },
      { kind: 'namespaces', namespaces: [{ namespace: 'ns-0', changedEntries: names.sort() }] },
    );
    if (report.errors.length > 0) throw new Error(report.errors.map((e) => e.message).join('; '));
    // A namespace listing returns every entry of it: count the entries read, not the calls.
    const registryReads = catalog.reads.getEntry + catalog.reads.listEntries * size;
    return {
      namespaceSize: size,
      changed,
      registryReadsPerChangedEntry: registryReads / changed,
      kubernetesRequestsPerChangedEntry: api.requests.length / changed,
      writes: api.writes().length,
    };
  } finally {
    await api.close();
  }
}

/**
 * The periodic full reconcile's registry reads by fleet size, over the real store in dynalite
 * (counted on the client, so retries count once): `entries` VMs connected through the store's
 * real write, spread over `namespaces` namespaces, each with its group applied (which indexes
 * the namespace). A first reconcile syncs the cluster stand-in; the second, with nothing
 * changed, is the one measured: the registry's share of every 5-minute tick. Istio target.
 */
export async function measureFullReconcileReads(entries: number, namespaces = 10) {
  const dynamo = await startDynalite();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const api = await startKubeApiServerStandIn();
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const store = composeRegistry(client, 'bench');
    for (let n = 0; n < namespaces; n += 1) {
      await store.applyGroup({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: { name: 'bench', namespace: `ns-${n}`, uid: 'bench-uid' },
        spec: { template: { ports: { http: 8080 } } },
      });
    }
    await inBatches(entries, 64, (i) => connectBenchVm(store, i, T0, `ns-${i % namespaces}`));
    const config = new KubeConfig();
    config.loadFromString(api.kubeconfig);
    const cluster = createKubernetesCluster(config);
    await reconcile({ store, cluster }, { targets: ['istio'], concurrency: 16 });
    const counter = countRequests(raw);
    api.resetRequests();
    const report = await reconcile({ store, cluster }, { targets: ['istio'], concurrency: 16 });
    if (report.errors.length > 0) throw new Error(report.errors.map((e) => e.message).join('; '));
    const requests = counter.counts();
    const itemsRead = counter.itemsRead();
    // Read units as DynamoDB charges a Query: its items' bytes in 4 KB units, 0.5 each
    // (eventually consistent); the index Query is consistent (1 per 4 KB). Sizes from the items.
    const bytesByNamespace = new Map<string, number>();
    let indexBytes = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await client.send(
        new ScanCommand({
          TableName: 'bench',
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        const pk = String(item.pk);
        if (pk === 'NAMESPACES') indexBytes += itemSize(item);
        else if (pk.startsWith('NS#') && String(item.sk).startsWith('WE#'))
          bytesByNamespace.set(pk, (bytesByNamespace.get(pk) ?? 0) + itemSize(item));
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    let readUnits = Math.max(1, Math.ceil(indexBytes / 4096));
    for (const bytes of bytesByNamespace.values())
      readUnits += Math.max(1, Math.ceil(bytes / 4096)) * 0.5;
    return {
      entries,
      namespaces,
      requests,
      scans: requests.Scan ?? 0,
      itemsRead,
      readUnits,
      entryBytes: Math.round(
        [...bytesByNamespace.values()].reduce((a, b) => a + b, 0) / Math.max(1, entries),
      ),
      kubernetesRequests: api.requests.length,
      writes: api.writes().length,
      ms: Math.round(report.durationMs),
    };
  } finally {
    await api.close();
    raw.destroy();
    await dynamo.close();
  }
}

function recordOptions(i: number, namespaces: number, at: number) {
  return {
    namespace: `ns-${i % namespaces}`,
    address: `10.${Math.floor(i / 65536) % 256}.${Math.floor(i / 256) % 256}.${i % 256}`,
    health: { status: 'True' as const, at },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await measureProjection(), null, 2));
}
