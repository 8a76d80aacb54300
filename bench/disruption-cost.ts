import { startDynalite } from '../infra/local/dynalite-server.ts';
import { ISTIO_API_VERSION } from '../lib/domain/model.ts';
import { runSweep } from '../lib/registration/sweep.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';

export interface DisruptionCost {
  mode: string;
  away: number;
  /** Deletions per (simulated) second over ten one-minute runs. */
  deletesPerSecond: number;
  /** The first run: deletions, and their pace while it deleted (per second of pacing). */
  firstRunDeleted: number;
  firstRunPace: number;
  /** Items read by the fail-static decision of one run (counters, newest connect, record). */
  decisionItemsRead: number;
  /** Items read by the whole first run (decision plus candidates). */
  runItemsRead: number;
}

const MINUTE = 60_000;
const policy = { gracePeriodMs: 5 * MINUTE, maxConnectionAgeMs: 120 * MINUTE };
const failStatic = {
  threshold: 0.55,
  windowMs: 5 * MINUTE,
  secondaryDeletesPerSecond: 0.1,
  holdBoundMs: 60 * MINUTE,
  sweepIntervalMs: MINUTE,
};
const T0 = Date.UTC(2025, 5, 1, 12);

/**
 * One scenario on a fresh table: `entries` VMs in 3 zones, `away` of them (from the first
 * zones on) dropped abnormally. Then ten sweeper runs a minute apart (simulated: pacing sleeps
 * add to the clock, nothing waits) and the deletion rate they reached.
 */
async function scenario(entries: number, away: number, allZones: boolean): Promise<DisruptionCost> {
  const dynamo = await startDynalite();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const store = composeRegistry(client, 'bench');
    const zones = ['eu-west-1/a', 'eu-west-1/b', 'eu-west-1/c'];
    const names = Array.from({ length: entries }, (_, i) => `vm-${i}`);
    const zoneOf = (i: number) => zones[allZones ? i % 3 : Math.floor((i * 3) / entries)] ?? '';
    for (let i = 0; i < entries; i += 50) {
      await Promise.all(
        names.slice(i, i + 50).map((name, j) =>
          store.connect({
            entry: {
              apiVersion: ISTIO_API_VERSION,
              kind: 'WorkloadEntry',
              metadata: { name, namespace: 'bench' },
              spec: { address: '10.0.0.1', locality: `${zoneOf(i + j)}/r` },
            },
            autoRegistrationGroup: 'g',
            origin: name,
            mayCreate: true,
            recordConnection: false,
            healthChecksEnabled: false,
            groupGeneration: 1,
            connectionId: `${name}-c`,
            connectedAt: T0,
            controller: 'bench',
            identity: { principal: 'token:bench' },
          }),
        ),
      );
    }
    const dropped = names.slice(0, away);
    for (let i = 0; i < dropped.length; i += 50) {
      await Promise.all(
        dropped.slice(i, i + 50).map((name) =>
          store.leave({
            connectionId: `${name}-c`,
            entry: { namespace: 'bench', name },
            at: T0 + MINUTE,
            departure: 'abnormal',
          }),
        ),
      );
    }
    // A connect keeps happening (rotations), so only the zones decide.
    let now = T0 + 6 * MINUTE;
    let deleted = 0;
    let mode = '';
    let decisionItemsRead = 0;
    let runItemsRead = 0;
    let firstRunDeleted = 0;
    let firstRunPace = 0;
    for (let run = 0; run < 10; run++) {
      await store.connect({
        entry: {
          apiVersion: ISTIO_API_VERSION,
          kind: 'WorkloadEntry',
          metadata: { name: names.at(-1) ?? '', namespace: 'bench' },
          spec: { address: '10.0.0.1' },
        },
        autoRegistrationGroup: 'g',
        origin: names.at(-1) ?? '',
        mayCreate: true,
        recordConnection: false,
        healthChecksEnabled: false,
        groupGeneration: 1,
        connectionId: `rot-${run}`,
        connectedAt: now - 1000,
        controller: 'bench',
        identity: { principal: 'token:bench' },
      });
      const counter = countRequests(client);
      let slept = 0;
      const result = await runSweep(store, {
        now,
        policy,
        maxDeletes: 2000,
        deletesPerSecond: 50,
        failStatic,
        sleep: async (ms) => {
          slept += ms;
        },
      });
      if (run === 0) {
        mode = result.disruption?.mode ?? '';
        runItemsRead = counter.itemsRead();
        // The decision: the record, the ZONE partition, the newest connect (candidates aside).
        decisionItemsRead = counter.itemsRead() - result.candidatesRead;
        if (Object.keys(result.slowed).length > 0) mode = 'normal (zones slowed)';
        firstRunDeleted = result.deleted.length;
        firstRunPace = slept > 0 ? (result.deleted.length - 1) / (slept / 1000) : 0;
      }
      deleted += result.deleted.length;
      now += Math.max(MINUTE, slept);
    }
    return {
      mode,
      away,
      deletesPerSecond: deleted / ((now - (T0 + 6 * MINUTE)) / 1000),
      decisionItemsRead,
      runItemsRead,
      firstRunDeleted,
      firstRunPace,
    };
  } finally {
    raw.destroy();
    await dynamo.close();
  }
}

/** Normal (a few away), slowed (one zone 60% away) and held (every zone away). */
export async function measureDisruptionCost(entries = 600): Promise<DisruptionCost[]> {
  return [
    await scenario(entries, Math.round(entries * 0.05), true),
    await scenario(entries, Math.round((entries / 3) * 0.6), false),
    await scenario(entries, entries - 1, true),
  ];
}
