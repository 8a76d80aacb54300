import { loadavg } from 'node:os';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SWEEPER_MEMORY_MB } from '../infra/constructs/sweeper-sizing.ts';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local-server.ts';
import { createDynamoDbClient } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { type ManagementApiStandIn, startManagementApiStandIn } from './management-api-stand-in.ts';
import { measureStreamProjection } from './projection.ts';
import { type DepartureLoad, measureMassDeparture } from './scale-departure.ts';
import { type FairnessResult, measureFairness } from './scale-fair.ts';
import { BenchFleet, MINUTE, SWEEPER_TIMEOUT_S } from './scale-fleet.ts';
import {
  type CpuPerRun,
  cpuPerRun,
  median,
  RUNS,
  round,
  runMinutes,
  spreadCrashes,
} from './scale-runs.ts';

/**
 * The registrar at fleet size, with its real code against DynamoDB Local (or dynalite):
 *
 * 1. One namespace of N VMs (the hottest key when they all leave), connected over the last
 *    108 minutes (as rotation spreads them). 20 crash with their `$disconnect` lost (only a
 *    liveness check finds them), 10 close without a close frame (`$disconnect` 1006), spread
 *    over the check order. Thirteen minutes, each: ~N/108 rotations through the real
 *    authorizer, `$connect` and `$disconnect` handlers, then one run of the deployed sweeper
 *    handler (functions/sweeper.ts, wired as on Lambda) whose liveness checks go through the
 *    SDK's management API client over HTTP to a stand-in in another process that answers after
 *    25 ms. Measured per run: wall time (stopping at the deployed 45 s as the handler does),
 *    this process's CPU (the stand-in and DynamoDB Local run in other processes), and that CPU
 *    stretched to the sweeper's Lambda memory (1,769 MB = one vCPU). Then every VM's last
 *    connection drops within one simulated minute: writes per key and second, in WCU.
 * 2. The fair sweeper (bench/scale-fair.ts): N VMs over shop, evil and 48 small namespaces;
 *    evil leaves a backlog of clean departures 5 runs deep and of abnormal ones in slowed cells
 *    of zones it invents; shop's crashed VMs must leave as fast as in 1.
 *
 * The simulated clock is the registrar's `now`; the durations (API calls, DynamoDB requests,
 * the run deadline) are real, on this machine.
 */
export interface ScaleResult {
  N: number;
  livenessCoveragePct: number;
  /** The longest a VM whose `$disconnect` was lost stayed registered, in sweep minutes. */
  worstCrashedStayMinutes: number;
  /** The longest a VM that closed without a close frame stayed registered. */
  worstClosedStayMinutes: number;
  longestRunSeconds: number;
  sweeperTimeoutSeconds: number;
  cpu: CpuPerRun;
  /** Per run, median: the sweeper's DynamoDB queries and the items they read. */
  queriesPerRun: number;
  itemsReadPerRun: number;
  maxPartitionWcuPerSecond: number;
  hottestKey: string;
  hottestByKind: DepartureLoad['byKind'];
  /**
   * Registry reads of a projector stream batch per changed entry, in a namespace of 1,000
   * (bench/projection.ts, measureStreamProjection: the Kubernetes API is a stand-in).
   */
  projectorReadsPerChangedEntry: number;
  countersExact: boolean;
  /**
   * docs/cost.md's model per 1,000 VMs a month: the per-VM part ($37.30), the fixed part
   * ($22.40) shared by the fleet, and the sweeper's Lambda time at the longest run measured.
   */
  costPer1000VmsUsd: number;
  managementCallsPerVmPerHour: number;
  fair?: FairnessResult;
  /** The machine's 1-minute load average when the measurement began and ended. */
  load: [number, number];
  backend: string;
}

const CRASHED_LOST = 20;
const CRASHED_CLOSED = 10;
const CHECK_LATENCY_MS = 25;

export async function measureScale(
  vms: number,
  options: {
    backend?: 'dynamodb-local' | 'dynalite';
    log?: (line: string) => void;
    /** Also the fair-sweeper scenario (default true). */
    fair?: boolean;
  } = {},
): Promise<ScaleResult> {
  const backend = options.backend ?? 'dynamodb-local';
  const log = options.log ?? (() => {});
  const loadBefore = loadavg()[0] ?? 0;
  const dynamo = backend === 'dynalite' ? await startDynalite() : await startDynamoDbLocal();
  const raw: DynamoDBClient = createDynamoDbClient({
    region: 'us-east-1',
    endpoint: dynamo.endpoint,
  });
  const standIn = await startManagementApiStandIn(CHECK_LATENCY_MS);
  try {
    const one = await oneNamespace(raw, dynamo.endpoint, standIn, vms, log);
    const fair =
      options.fair === false
        ? undefined
        : await measureFairness(raw, dynamo.endpoint, standIn, vms, log);
    return {
      ...one,
      ...(fair ? { fair } : {}),
      projectorReadsPerChangedEntry: (await measureStreamProjection(1_000))
        .registryReadsPerChangedEntry,
      load: [loadBefore, loadavg()[0] ?? 0],
      backend,
    };
  } finally {
    await standIn.close();
    raw.destroy();
    await dynamo.close();
  }
}

async function oneNamespace(
  raw: DynamoDBClient,
  endpoint: string,
  standIn: ManagementApiStandIn,
  vms: number,
  log: (line: string) => void,
) {
  const tableName = 'scale-one';
  await ensureTable(raw, tableName);
  const start = Date.UTC(2026, 10, 24, 12);
  const fleet = new BenchFleet(endpoint, tableName, standIn, start);
  const seeded = Date.now();
  // Connect times spread over 108 minutes, in an order unrelated to the index.
  await fleet.seed(
    [{ namespace: 'fleet', vms }],
    (i) => start - 1 - Math.floor((((i * 7919) % vms) / vms) * 108 * MINUTE),
  );
  log(`seeded ${vms} entries in one namespace in ${((Date.now() - seeded) / 1000).toFixed(0)} s`);
  const crashes = spreadCrashes(fleet, CRASHED_LOST + CRASHED_CLOSED);
  const lost = crashes.slice(0, CRASHED_LOST);
  const closed = crashes.slice(CRASHED_LOST);
  await fleet.loseDisconnect(lost);
  for (const vm of closed) await fleet.leave(vm, start, 1006);

  const stays = await runMinutes(fleet, start, log, { lost, closed });
  const survivors = fleet.vms.filter((vm) => !vm.gone);
  const departure = await measureMassDeparture(
    fleet.client,
    fleet.store,
    tableName,
    survivors,
    start + 20 * MINUTE,
  );
  fleet.close();
  await raw.send(new DeleteTableCommand({ TableName: tableName }));
  const longest = Math.max(...fleet.runs.map((run) => run.wallMs)) / 1000;
  return {
    N: vms,
    livenessCoveragePct: stays.coveragePct,
    worstCrashedStayMinutes: stays.lost,
    worstClosedStayMinutes: stays.closed,
    longestRunSeconds: round(longest),
    sweeperTimeoutSeconds: SWEEPER_TIMEOUT_S,
    cpu: cpuPerRun(fleet.runs, vms),
    queriesPerRun: median(fleet.runs.map((run) => run.queries)),
    itemsReadPerRun: median(fleet.runs.map((run) => run.itemsRead)),
    maxPartitionWcuPerSecond: departure.maxWcuPerSecond,
    hottestKey: departure.hottestKey,
    hottestByKind: departure.byKind,
    countersExact: departure.countersExact,
    costPer1000VmsUsd: costPer1000Vms(vms, longest),
    managementCallsPerVmPerHour: round(
      (fleet.runs.reduce((sum, run) => sum + run.managementCalls, 0) / vms) * (60 / RUNS),
    ),
  };
}

/** docs/cost.md, "Per 1,000 VMs per month", with the sweeper's measured run time. */
export function costPer1000Vms(vms: number, sweeperRunSeconds: number): number {
  const perVm = 37.3; // per 1,000 VMs: connection minutes, messages, Lambda, DynamoDB (the address claim included), logs
  const fixed = 22.4; // metrics, alarms, dashboard
  const sweeperGbSeconds = 43_200 * sweeperRunSeconds * (SWEEPER_MEMORY_MB / 1024);
  const sweeper = sweeperGbSeconds * 0.0000133334;
  return Number((perVm + ((fixed + sweeper) * 1000) / vms).toFixed(2));
}
