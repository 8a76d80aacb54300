import { loadavg } from 'node:os';
import { sweeperSizing } from '../infra/constructs/sweeper-sizing.ts';
import { ENV } from '../lib/config.ts';
import { buildRegistration } from '../lib/domain/build-entry.ts';
import { entryOrigin } from '../lib/domain/entry-name.ts';
import { HEARTBEAT_ANNOTATIONS, type Heartbeat, silenceBoundMs } from '../lib/domain/heartbeat.ts';
import { planFor, SAMPLE_EVERY } from '../lib/domain/heartbeat-lanes.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { DynamoDbRegistryStore } from '../lib/store/dynamodb-registry-store.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { benchGroup, benchIp, inBatches } from './bench-entries.ts';
import { startDynaliteProcess } from './dynalite-process.ts';
import { startManagementApiStandIn } from './management-api-stand-in.ts';
import { sweeperRunner } from './sweeper-runner.ts';

/** One lane's invocation, run alone. */
export interface LaneFigures {
  lane: number;
  /** Holders its run checked (every pass), and the passes over its whole share it finished. */
  checks: number;
  fullPasses: number;
  /** The first full pass over its share: wall time (the run's own `passesMs`). */
  firstPassMs: number;
  runWallMs: number;
  /** This process's CPU during the run (the store runs in a process of its own). */
  runCpuMs: number;
  cpuPerCheckMs: number;
  /** Silent VMs it closed, and when the last of them was closed, from its run's start. */
  closed: number;
  lastCloseMs: number;
  /** The machine's 1-minute load average as the run ended. */
  load: number;
}

export interface SilenceLanes {
  vms: number;
  heartbeat: string;
  boundMs: number;
  lanes: number;
  silent: number;
  closed: number;
  perLane: LaneFigures[];
  /**
   * Were the lanes side by side (each Lambda instance has its own CPU): the last silent VM
   * closed this long after the tick (the slowest lane's last close), and a full pass over
   * every share takes the slowest lane's first pass.
   */
  sideBySideLastCloseMs: number;
  sideBySidePassMs: number;
}

/**
 * Silence at scale with heartbeat lanes, through the deployed sweeper handler (bench/
 * silence-scale.ts's setting: one group of `vms` VMs with `heartbeat`, the management API
 * stand-in at 25 ms a call, 1 % of the VMs silent past the bound, dynalite in its own
 * process). The lanes' plan is the one lane 0 would publish once the passes sampled the group
 * (every SAMPLE_EVERY-th name, cut into `lanes` equal ranges: lib/domain/heartbeat-lanes.ts),
 * written before the runs: learning it takes lane 0 a full pass first, which the integration
 * tests show (test/integration/heartbeat-lanes.test.ts). Then each lane's invocation of one
 * tick runs ALONE, one after another, at that tick's simulated time: on AWS each is its own
 * Lambda instance with its own CPU, while this machine's cores are shared.
 */
export async function measureSilenceLanes(
  vms: number,
  heartbeat: Heartbeat,
  lanes: number,
  onlyLanes?: readonly number[],
): Promise<SilenceLanes> {
  const dynamo = await startDynaliteProcess();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const standIn = await startManagementApiStandIn(25);
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const store = new DynamoDbRegistryStore(client, 'bench');
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
      env: { [ENV.heartbeatLanes]: String(lanes) },
    });
    const seen = Date.now() - 10 * 60_000;
    await sweeper.run(seen);
    const names: string[] = [];
    await inBatches(vms, 64, async (i) => {
      const ip = benchIp(i);
      const connectedAt = seen + 1_000 + (i % 1_000);
      const built = buildRegistration(
        group,
        { group: 'bench', namespace: 'bench', ips: [ip], labels: {} },
        connectedAt,
      );
      names.push(built.entry.metadata.name);
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
    names.sort();
    const samples = names.filter((_, at) => at % SAMPLE_EVERY === 0);
    await store.saveHeartbeatPlan({ current: planFor(lanes, { 'bench/bench': samples }, 1, 0) });
    const silent = Math.round(vms * 0.01);
    const silentIds = Array.from(
      { length: silent },
      (_, k) => `c${Math.floor((k * vms) / silent)}`,
    );
    await standIn.markSilent(silentIds, Date.now() - silenceBoundMs(heartbeat) - 5_000);
    const tick = seen + 2 * 60_000;
    const perLane: LaneFigures[] = [];
    for (const lane of onlyLanes ?? Array.from({ length: lanes }, (_, k) => k)) {
      const before = (await standIn.closes()).length;
      const began = Date.now();
      const run = await sweeper.run(tick, lane);
      const closes = (await standIn.closes()).slice(before);
      const checks = run.summary?.heartbeat?.checked ?? 0;
      const passes = run.summary?.heartbeat?.passesMs ?? [];
      perLane.push({
        lane,
        checks,
        fullPasses: passes.length,
        firstPassMs: passes[0] ?? Number.NaN,
        runWallMs: Math.round(run.wallMs),
        runCpuMs: Math.round(run.cpuMs),
        cpuPerCheckMs: Math.round((run.cpuMs / Math.max(1, checks)) * 1000) / 1000,
        closed: closes.length,
        lastCloseMs: closes.length > 0 ? Math.max(...closes.map((c) => c.at)) - began : 0,
        load: Math.round((loadavg()[0] ?? 0) * 10) / 10,
      });
    }
    return {
      vms,
      heartbeat: `${heartbeat.intervalMs / 1000}s x ${heartbeat.misses}`,
      boundMs: silenceBoundMs(heartbeat),
      lanes,
      silent,
      closed: perLane.reduce((sum, lane) => sum + lane.closed, 0),
      perLane,
      sideBySideLastCloseMs: Math.max(...perLane.map((lane) => lane.lastCloseMs)),
      sideBySidePassMs: Math.max(...perLane.map((lane) => lane.firstPassMs)),
    };
  } finally {
    await standIn.close();
    raw.destroy();
    await dynamo.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // node bench/silence-lanes.ts <VMs> <interval s> <misses> <lanes> [lane,lane,...]
  const [vms, interval, misses, lanes, only] = process.argv.slice(2);
  const result = await measureSilenceLanes(
    Number(vms ?? 100_000),
    { intervalMs: Number(interval ?? 10) * 1000, misses: Number(misses ?? 3) },
    Number(lanes ?? 6),
    only ? only.split(',').map(Number) : undefined,
  );
  console.log(JSON.stringify(result, null, 2));
}
