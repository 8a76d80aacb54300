import { setTimeout as sleep } from 'node:timers/promises';
import { startDynaliteThread } from '../infra/local/dynalite-thread.ts';
import type { WorkloadGroup } from '../lib/domain/model.ts';
import { DEFAULT_PACE_TEXT, ROLLOUT_PACE_ANNOTATION } from '../lib/rollout/rollout-pace.ts';
import { runRollouts } from '../lib/rollout/run-rollouts.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { itemSize } from '../lib/store/item-size.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { composeRollouts } from '../lib/wiring/rollouts.ts';
import { connectBenchVm, inBatches } from './bench-entries.ts';

export interface RolloutCost {
  entries: number;
  pace: string;
  writesPerSecond: number;
  updated: number;
  conflicts: number;
  /** From the run's start to the last entry written (the schedule's wait comes on top). */
  rolloutSeconds: number;
  runs: number;
  requests: Record<string, number>;
  writesPerEntry: number;
  otherRequestsPerEntry: number;
  itemsReadPerEntry: number;
  /** An entry item as the rollout leaves it: its write units (1 KB each) per write. */
  entryBytes: number;
}

const GROUP: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'bench', namespace: 'bench', uid: 'bench-uid' },
  spec: { template: { ports: { http: 8080 } } },
};

/**
 * A template change (a label added) reaching `entries` live entries of one group, with the
 * real rollout run over dynalite on its own thread, the real clock and the default pace: how
 * long from the run's start until every entry is on the new template, and what it costs in
 * requests per changed entry. Runs as the schedule would: one run after another (each at most
 * REGISTRAR_ROLLOUT_RUN_TIME, 2 m), until done.
 */
export async function measureRolloutCost(
  entries = 20_000,
  writesPerSecond = 400,
): Promise<RolloutCost> {
  const dynamo = await startDynaliteThread({});
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const registry = composeRegistry(client, 'bench');
    const rollouts = composeRollouts(client, 'bench');
    const pace = { [ROLLOUT_PACE_ANNOTATION]: DEFAULT_PACE_TEXT };
    await registry.applyGroup({ ...GROUP, metadata: { ...GROUP.metadata, annotations: pace } });
    const connectedAt = Date.now();
    await inBatches(entries, 64, (i) => connectBenchVm(registry, i, connectedAt));
    // The change: a label for a traffic shift.
    await registry.applyGroup({
      ...GROUP,
      metadata: { ...GROUP.metadata, annotations: pace },
      spec: { template: { ...GROUP.spec.template, labels: { version: 'v2' } } },
    });
    const counter = countRequests(raw);
    const started = performance.now();
    let updated = 0;
    let conflicts = 0;
    let runs = 0;
    let lastWrite = started;
    for (; updated < entries && runs < 10; runs++) {
      const run = await runRollouts(
        {
          store: rollouts,
          groups: registry,
          now: () => Date.now(),
          sleep: (ms) => sleep(ms),
          onEntryRolledOut: () => {
            lastWrite = performance.now();
          },
        },
        {
          deadline: Date.now() + 120_000,
          writesPerSecond,
          concurrency: 16,
          pageSize: 100,
          recheckMs: 300_000,
        },
      );
      updated += run.updated;
      conflicts += run.conflicts;
    }
    const requests = counter.counts();
    const sample = await registry.getEntry({ namespace: 'bench', name: 'bench-10.0.0.0' });
    const { Item } = await client.send(
      new (await import('@aws-sdk/lib-dynamodb')).GetCommand({
        TableName: 'bench',
        Key: { pk: 'NS#bench', sk: `WE#${sample?.entry.metadata.name ?? ''}` },
      }),
    );
    const writes = requests.UpdateItem ?? 0;
    const all = Object.values(requests).reduce((a, b) => a + b, 0);
    return {
      entries,
      pace: DEFAULT_PACE_TEXT,
      writesPerSecond,
      updated,
      conflicts,
      rolloutSeconds: (lastWrite - started) / 1000,
      runs,
      requests,
      writesPerEntry: writes / entries,
      otherRequestsPerEntry: (all - writes) / entries,
      itemsReadPerEntry: counter.itemsRead() / entries,
      entryBytes: Item ? itemSize(Item) : 0,
    };
  } finally {
    raw.destroy();
    await dynamo.close();
  }
}
