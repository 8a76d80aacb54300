import { startDynalite } from '../infra/local/dynalite-server.ts';
import { buildRegistration } from '../lib/domain/build-entry.ts';
import { entryOrigin } from '../lib/domain/entry-name.ts';
import type { WorkloadGroup } from '../lib/domain/model.ts';
import { runSweep } from '../lib/registration/sweep.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { DynamoDbRegistryStore } from '../lib/store/dynamodb-registry-store.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { countRequests } from '../lib/store/request-counter.ts';

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

const group: WorkloadGroup = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'bench', namespace: 'bench', uid: 'bench-uid' },
  spec: { template: { ports: { http: 8080 } } },
};

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
    const store = new DynamoDbRegistryStore(documentClientFor(raw), 'bench');
    const start = Date.UTC(2026, 10, 23, 12);
    for (let i = 0; i < vms; i += 64) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < Math.min(vms, i + 64); j++) {
        const ip = `10.${(j >> 16) & 255}.${(j >> 8) & 255}.${j & 255}`;
        const connectedAt = start - Math.floor((j / vms) * 60 * MINUTE) - 1;
        const built = buildRegistration(
          group,
          { group: 'bench', namespace: 'bench', ips: [ip], labels: {} },
          connectedAt,
        );
        batch.push(
          store.connect({
            ...built,
            origin: entryOrigin('bench', ip),
            mayCreate: true,
            recordConnection: false,
            groupGeneration: 1,
            connectionId: `c${j}`,
            connectedAt,
            controller: 'bench',
            identity: { principal: 'token:bench', namespace: 'bench' },
          }),
        );
      }
      await Promise.all(batch);
    }
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
