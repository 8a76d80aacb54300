import { startDynalite } from '../infra/local/dynalite-server.ts';
import { runSweep } from '../lib/registration/sweep.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { connectBenchVm, inBatches } from './bench-entries.ts';

export interface LivenessCalls {
  vms: number;
  livenessIntervalMin: number;
  sweeps: number;
  /** GET @connections calls over the hour. */
  managementCalls: number;
  perVmPerHour: number;
  budgetPerVmPerHour: number;
  /** DynamoDB requests over the hour's sweeps, by operation. */
  requests: Record<string, number>;
}

const MINUTE = 60_000;

/**
 * Liveness checks' cost: `vms` connected VMs (connects spread over the past hour, as rotation
 * spreads them), an hour of sweeper runs one a minute (simulated clock), and a stand-in for
 * API Gateway's `GET @connections` that counts calls and answers "alive" (the management API
 * cannot run here). DESIGN budget: at most 60 / interval-in-minutes calls per VM per hour.
 */
export async function measureLivenessCalls(vms = 1_000, intervalMin = 5): Promise<LivenessCalls> {
  const dynamo = await startDynalite();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  try {
    await ensureTable(raw, 'bench');
    const store = composeRegistry(documentClientFor(raw), 'bench');
    const start = Date.UTC(2026, 10, 23, 12);
    // Connects spread over the past hour, as rotation spreads them.
    await inBatches(vms, 64, (i) =>
      connectBenchVm(store, i, start - Math.floor((i / vms) * 60 * MINUTE) - 1),
    );
    const policy = {
      gracePeriodMs: 5 * MINUTE,
      maxConnectionAgeMs: 120 * MINUTE,
      livenessIntervalMs: intervalMin * MINUTE,
      sweepIntervalMs: MINUTE,
    };
    let managementCalls = 0;
    const liveness = {
      check: async () => {
        managementCalls += 1;
        return 'alive' as const;
      },
    };
    await store.setLivenessMark(start - MINUTE);
    const counter = countRequests(raw);
    let sweeps = 0;
    for (let now = start; now < start + 60 * MINUTE; now += MINUTE) {
      await runSweep(store, {
        now,
        policy,
        maxDeletes: 1_000,
        deletesPerSecond: 1_000_000,
        sleep: async () => {},
        liveness,
        connectSettleMs: 30_000,
      });
      sweeps += 1;
    }
    return {
      vms,
      livenessIntervalMin: intervalMin,
      sweeps,
      managementCalls,
      perVmPerHour: managementCalls / vms,
      budgetPerVmPerHour: 60 / intervalMin,
      requests: counter.counts(),
    };
  } finally {
    raw.destroy();
    await dynamo.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await measureLivenessCalls(Number(process.argv[2] ?? 1_000));
  console.log(JSON.stringify(result, null, 2));
}
