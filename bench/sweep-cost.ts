import { startDynalite } from '../infra/local/dynalite-server.ts';
import { runSweep } from '../lib/registration/sweep.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { connectBenchVm, inBatches } from './bench-entries.ts';

export interface SweepCost {
  entries: number;
  due: number;
  deleted: number;
  itemsRead: number;
  itemsReadPerDeleted: number;
  requests: Record<string, number>;
  sweepMs: number;
}

const MINUTE = 60_000;
const policy = { gracePeriodMs: 5 * MINUTE, maxConnectionAgeMs: 120 * MINUTE };

/**
 * Sweep cost with `entries` registered VMs of which `due` are due: half stayed disconnected past
 * the grace period, half are "connected" past 1.5 x the maximum connection age. Everything else
 * is connected and recent, or disconnected too recently. The sweep must read only what is due.
 */
export async function measureSweepCost(entries = 10_000, due = 100): Promise<SweepCost> {
  const dynamo = await startDynalite();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  try {
    await ensureTable(raw, 'bench');
    const store = composeRegistry(documentClientFor(raw), 'bench');
    const now = Date.UTC(2026, 10, 21, 12);
    const recentlyDisconnected = Math.floor((entries - due) / 10);
    await inBatches(entries, 64, async (i) => {
      const isDue = i < due;
      const stale = isDue && i % 2 === 1;
      // Due-and-disconnected entries connected long ago; stale ones connected 3 h + 1 min ago.
      const connectedAt = stale
        ? now - 181 * MINUTE
        : isDue
          ? now - 60 * MINUTE
          : now - 30 * MINUTE;
      const { entry, connectionId } = await connectBenchVm(store, i, connectedAt);
      if (isDue && !stale) await store.leave({ connectionId, entry, at: now - 10 * MINUTE });
      else if (!isDue && i < due + recentlyDisconnected) {
        await store.leave({ connectionId, entry, at: now - 1 * MINUTE });
      }
    });
    const counter = countRequests(raw);
    const started = performance.now();
    const result = await runSweep(store, {
      now,
      policy,
      maxDeletes: 10_000,
      deletesPerSecond: 1_000_000,
      sleep: async () => {},
    });
    const sweepMs = performance.now() - started;
    const itemsRead = counter.itemsRead();
    return {
      entries,
      due,
      deleted: result.deleted.length,
      itemsRead,
      itemsReadPerDeleted: itemsRead / Math.max(1, result.deleted.length),
      requests: counter.counts(),
      sweepMs,
    };
  } finally {
    raw.destroy();
    await dynamo.close();
  }
}
