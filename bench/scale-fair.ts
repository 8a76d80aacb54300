import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { sweeperSizing } from '../infra/constructs/sweeper-sizing.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { inBatches } from './bench-entries.ts';
import type { ManagementApiStandIn } from './management-api-stand-in.ts';
import { BenchFleet, MINUTE, type NamespacePlan } from './scale-fleet.ts';
import { type CpuPerRun, cpuPerRun, median, runMinutes, spreadCrashes } from './scale-runs.ts';

export interface FairnessResult {
  N: number;
  namespaces: number;
  /** evil's backlog: clean departures, and abnormal ones in slowed cells of invented zones. */
  evilClean: number;
  evilAbnormal: number;
  /** What was left of it after the runs. */
  evilCleanLeft: number;
  evilAbnormalLeft: number;
  /** shop's crashed VMs: the longest stay, in sweep minutes, of each kind. */
  worstLostStayMinutes: number;
  worstClosedStayMinutes: number;
  livenessCoveragePct: number;
  longestRunSeconds: number;
  cpu: CpuPerRun;
  queriesPerRun: number;
  itemsReadPerRun: number;
  maxNamespacesWithDue: number;
}

const INVENTED_ZONES = ['mars-1/mars-1a', 'mars-1/mars-1b', 'mars-1/mars-1c', 'mars-1/mars-1d'];
const REAL_ZONES = ['us-east-1/us-east-1a', 'us-east-1/us-east-1b', 'us-east-1/us-east-1c'];
const TEAMS = 48;

/**
 * The fair sweeper at fleet size: N VMs over `shop`, `evil` and 48 small team namespaces. Before
 * the first run, evil's VMs leave: a backlog of clean departures up to five runs' budget deep
 * (its `$disconnect`s with 1000), and a tenth of the fleet without a close frame in four zones
 * it invented (every one of those cells away: slowed). shop loses 20 VMs whose `$disconnect`
 * is lost and 10 that close without a close frame. Then the same minutes as the one-namespace
 * fleet: shop's crashed VMs must leave as fast as there (the bound is the policy's: grace 5 min,
 * plus one liveness interval for a lost `$disconnect`), and every live VM must still be checked
 * within the first interval.
 */
export async function measureFairness(
  raw: DynamoDBClient,
  endpoint: string,
  standIn: ManagementApiStandIn,
  vms: number,
  log: (line: string) => void,
): Promise<FairnessResult> {
  const tableName = 'scale-fair';
  await ensureTable(raw, tableName);
  const budget = sweeperSizing({ sweepRateMinutes: 1 }).maxDeletes;
  const evilClean = Math.min(5 * budget, Math.round(0.3 * vms));
  const evilAbnormal = Math.round(0.1 * vms);
  const perTeam = Math.max(1, Math.floor((0.05 * vms) / TEAMS));
  const shop = vms - evilClean - evilAbnormal - perTeam * TEAMS;
  const plans: NamespacePlan[] = [
    { namespace: 'shop', vms: shop, zones: REAL_ZONES },
    { namespace: 'evil', vms: evilClean + evilAbnormal, zones: INVENTED_ZONES },
    ...Array.from({ length: TEAMS }, (_, t) => ({
      namespace: `team-${String(t).padStart(2, '0')}`,
      vms: perTeam,
      zones: REAL_ZONES,
    })),
  ];
  const start = Date.UTC(2026, 10, 25, 12);
  const fleet = new BenchFleet(endpoint, tableName, standIn, start);
  const seeded = Date.now();
  await fleet.seed(plans, (i) => start - 1 - Math.floor((((i * 7919) % vms) / vms) * 108 * MINUTE));
  log(
    `seeded ${vms} entries in ${plans.length} namespaces in ${((Date.now() - seeded) / 1000).toFixed(0)} s`,
  );

  const evil = fleet.vms.filter((vm) => vm.ref.namespace === 'evil');
  const left = Date.now();
  await inBatches(evil.length, 32, async (k) => {
    const vm = evil[k];
    if (vm)
      await fleet.leave(vm, start - 6 * MINUTE + (k % 60) * 1000, k < evilClean ? 1000 : 1006);
  });
  log(
    `evil left: ${evilClean} cleanly, ${evilAbnormal} without a close frame, in ${((Date.now() - left) / 1000).toFixed(0)} s`,
  );
  const shopVms = fleet.vms.filter((vm) => vm.ref.namespace === 'shop');
  const crashes = spreadCrashes(fleet, 30, shopVms);
  const lost = crashes.slice(0, 20);
  const closed = crashes.slice(20);
  await fleet.loseDisconnect(lost);
  for (const vm of closed) await fleet.leave(vm, start, 1006);

  const stays = await runMinutes(fleet, start, log, { lost, closed });
  const remaining = async (kind: 'L' | 'D') => {
    let count = 0;
    for await (const _ of fleet.store.departuresOf('evil', kind, start + 60 * MINUTE)) count += 1;
    return count;
  };
  const result: FairnessResult = {
    N: vms,
    namespaces: plans.length,
    evilClean,
    evilAbnormal,
    evilCleanLeft: await remaining('L'),
    evilAbnormalLeft: await remaining('D'),
    worstLostStayMinutes: stays.lost,
    worstClosedStayMinutes: stays.closed,
    livenessCoveragePct: stays.coveragePct,
    longestRunSeconds: Number((Math.max(...fleet.runs.map((run) => run.wallMs)) / 1000).toFixed(1)),
    cpu: cpuPerRun(fleet.runs, vms),
    queriesPerRun: median(fleet.runs.map((run) => run.queries)),
    itemsReadPerRun: median(fleet.runs.map((run) => run.itemsRead)),
    maxNamespacesWithDue: Math.max(...fleet.runs.map((run) => run.summary?.namespacesWithDue ?? 0)),
  };
  fleet.close();
  await raw.send(new DeleteTableCommand({ TableName: tableName }));
  return result;
}
