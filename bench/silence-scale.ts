import { sweeperSizing } from '../infra/constructs/sweeper-sizing.ts';
import { buildRegistration } from '../lib/domain/build-entry.ts';
import { entryOrigin } from '../lib/domain/entry-name.ts';
import { HEARTBEAT_ANNOTATIONS, type Heartbeat, silenceBoundMs } from '../lib/domain/heartbeat.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { benchGroup, benchIp, inBatches } from './bench-entries.ts';
import { startDynaliteProcess } from './dynalite-process.ts';
import { startManagementApiStandIn } from './management-api-stand-in.ts';
import { sweeperRunner } from './sweeper-runner.ts';

export interface SilenceAtScale {
  vms: number;
  heartbeat: string;
  silent: number;
  /** Silent connections the run closed (DELETE @connections at the stand-in). */
  closed: number;
  /** From the run's start to the last silent connection closed: the first pass's reach. */
  lastClosedMs: number;
  /** Holder checks over the whole run (every pass), and the run's passes. */
  checks: number;
  runWallMs: number;
  runCpuMs: number;
  /** The store's CPU (dynalite, its own process) during the run: not in `runCpuMs`. */
  storeCpuMs: number;
  /** `runCpuMs / checks`: the sweeper's CPU per holder check. */
  cpuPerCheckMs: number;
  managementCalls: number;
  /** Silent connections closed so far after each run (with `runs` > 1). */
  closedByRun: number[];
}

/**
 * Silence at scale, through the deployed sweeper handler (functions/sweeper.ts as Lambda runs
 * it: the DynamoDB adapter, the management API over HTTP with the real client) against the
 * bench's stand-in, which answers each open connection's `LastActiveAt`: now for a VM that
 * pings, an old time for the `silentShare` that fell silent. All `vms` VMs are in one group
 * with `heartbeat`, connected after the sweeper saw the setting (an agent of 0.2.0). One
 * scheduled invocation: its passes (every half bound, until 45 s into the minute), how soon
 * every silent VM was closed, its wall time and its CPU.
 */
export async function measureSilenceAtScale(
  vms = 10_000,
  heartbeat: Heartbeat = { intervalMs: 10_000, misses: 3 },
  silentShare = 0.01,
  runs = 1,
): Promise<SilenceAtScale> {
  // The store in a process of its own: this process's CPU during a run is the sweeper's.
  const dynamo = await startDynaliteProcess();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const standIn = await startManagementApiStandIn(25);
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const store = composeRegistry(client, 'bench');
    const group = benchGroup('bench');
    group.metadata.annotations = {
      [HEARTBEAT_ANNOTATIONS.interval]: `${heartbeat.intervalMs}ms`,
      [HEARTBEAT_ANNOTATIONS.misses]: String(heartbeat.misses),
    };
    await store.applyGroup(group);
    const sweeper = sweeperRunner({
      client,
      tableName: 'bench',
      connectionsUrl: standIn.url,
      timeoutS: sweeperSizing({ sweepRateMinutes: 1 }).timeoutS,
    });
    // Simulated times in the past of the stand-in's clock (API Gateway's answers carry its own
    // time): the first run sees the setting, the VMs connect after it.
    const seen = Date.now() - 10 * 60_000;
    await sweeper.run(seen);
    await inBatches(vms, 64, async (i) => {
      const ip = benchIp(i);
      const connectedAt = seen + 1_000 + (i % 1_000);
      const built = buildRegistration(
        group,
        { group: 'bench', namespace: 'bench', ips: [ip], labels: {} },
        connectedAt,
      );
      await store.connect({
        ...built,
        origin: entryOrigin('bench', ip),
        mayCreate: true,
        recordConnection: false,
        groupGeneration: 1,
        connectionId: `c${i}`,
        connectedAt,
        controller: 'bench',
        identity: { principal: 'token:bench', namespace: 'bench' },
        agentVersion: '0.2.0',
      });
    });
    const silent = Math.round(vms * silentShare);
    const silentIds = Array.from(
      { length: silent },
      (_, k) => `c${Math.floor((k * vms) / silent)}`,
    );
    await standIn.markSilent(silentIds, Date.now() - silenceBoundMs(heartbeat) - 5_000);
    const callsBefore = await standIn.calls();
    const storeCpu = await dynamo.cpuMs();
    const began = Date.now();
    const run = await sweeper.run(seen + 2 * 60_000);
    const storeCpuMs = (await dynamo.cpuMs()) - storeCpu;
    const closes = await standIn.closes();
    // Further scheduled runs, a minute apart in the sweeper's time: each goes on from where
    // the last one's deadline stopped its pass (the heartbeat cursor).
    const closedByRun = [closes.length];
    for (let k = 1; k < runs; k++) {
      await sweeper.run(seen + (2 + k) * 60_000);
      closedByRun.push((await standIn.closes()).length);
    }
    const checks = run.summary?.livenessChecked ?? 0;
    return {
      vms,
      heartbeat: `${heartbeat.intervalMs / 1000}s x ${heartbeat.misses}`,
      silent,
      closed: closes.length,
      lastClosedMs: closes.length > 0 ? Math.max(...closes.map((c) => c.at)) - began : Number.NaN,
      checks,
      runWallMs: Math.round(run.wallMs),
      runCpuMs: Math.round(run.cpuMs),
      storeCpuMs: Math.round(storeCpuMs),
      cpuPerCheckMs: Math.round((run.cpuMs / checks) * 1000) / 1000,
      managementCalls: (await standIn.calls()) - callsBefore,
      closedByRun,
    };
  } finally {
    await standIn.close();
    raw.destroy();
    await dynamo.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await measureSilenceAtScale(
    Number(process.argv[2] ?? 10_000),
    undefined,
    undefined,
    Number(process.argv[3] ?? 1),
  );
  console.log(JSON.stringify(result, null, 2));
}
