import { loadavg } from 'node:os';
import { sweeperSizing } from '../infra/constructs/sweeper-sizing.ts';
import { ENV } from '../lib/config.ts';
import { buildRegistration } from '../lib/domain/build-entry.ts';
import { entryOrigin } from '../lib/domain/entry-name.ts';
import { HEARTBEAT_ANNOTATIONS, type Heartbeat, silenceBoundMs } from '../lib/domain/heartbeat.ts';
import { planFor, SAMPLE_EVERY } from '../lib/domain/heartbeat-lanes.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
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

/** A heartbeat setting and the lanes it runs with. */
export interface LaneSetting {
  heartbeat: Heartbeat;
  lanes: number;
  /** Run only these lanes (default all): a subset when lanes' shares are alike. */
  only?: readonly number[];
}

/**
 * Silence at scale with heartbeat lanes, through the deployed sweeper handler (bench/
 * silence-scale.ts's setting: one group of `vms` VMs, the management API stand-in at 25 ms a
 * call, 1 % of the VMs silent past the bound, dynalite in its own process). The VMs connect
 * once; each setting then applies the group's heartbeat as if the sweeper had seen it before
 * they connected (its record of the group, written at an earlier simulated time), so every
 * holder is under it, and marks another 1 % silent. The lanes' plan is the one lane 0 would
 * publish once the passes sampled the group (every SAMPLE_EVERY-th name, cut into `lanes`
 * equal ranges: lib/domain/heartbeat-lanes.ts), written before the runs: learning it takes
 * lane 0 a full pass first, which the integration tests show (test/integration/
 * heartbeat-lanes.test.ts). Then each lane's invocation of one tick runs ALONE, one after
 * another, at that tick's simulated time: on AWS each is its own Lambda instance with its own
 * CPU, while this machine's cores are shared.
 */
export async function measureSilenceLanes(
  vms: number,
  settings: readonly LaneSetting[],
): Promise<SilenceLanes[]> {
  const dynamo = await startDynaliteProcess();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const standIn = await startManagementApiStandIn(25);
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const store = composeRegistry(client, 'bench');
    const group = benchGroup('bench');
    const seen = Date.now() - 60 * 60_000;
    const names: string[] = [];
    await store.applyGroup(group);
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
    const results: SilenceLanes[] = [];
    for (const [index, setting] of settings.entries()) {
      const { heartbeat, lanes } = setting;
      group.metadata.annotations = {
        [HEARTBEAT_ANNOTATIONS.interval]: `${heartbeat.intervalMs}ms`,
        [HEARTBEAT_ANNOTATIONS.misses]: String(heartbeat.misses),
      };
      await store.applyGroup(group);
      // The sweeper's record of the group, as its run before the connects would have left it.
      await store.saveHeartbeatGroups({
        listedAt: seen,
        groups: { 'bench/bench': { ...heartbeat, since: seen } },
      });
      const version = index + 1;
      await store.saveHeartbeatPlan({
        current: planFor(lanes, { 'bench/bench': samples }, version, 0),
      });
      const sweeper = sweeperRunner({
        client,
        tableName: 'bench',
        connectionsUrl: standIn.url,
        timeoutS: sweeperSizing({ sweepRateMinutes: 1 }).timeoutS,
        env: { [ENV.heartbeatLanes]: String(lanes) },
      });
      // Another 1 % each setting (the last setting's silent VMs were closed).
      const silent = Math.round(vms * 0.01);
      const silentIds = Array.from(
        { length: silent },
        (_, k) => `c${Math.floor((k * vms) / silent) + index + 1}`,
      );
      await standIn.markSilent(silentIds, Date.now() - silenceBoundMs(heartbeat) - 5_000);
      // The tick: within a sweep interval of the record (no relisting in the runs).
      const tick = seen + 30_000;
      const perLane: LaneFigures[] = [];
      for (const lane of setting.only ?? Array.from({ length: lanes }, (_, k) => k)) {
        perLane.push(await runLane(sweeper, standIn, tick, lane));
      }
      results.push({
        vms,
        heartbeat: `${heartbeat.intervalMs / 1000}s x ${heartbeat.misses}`,
        boundMs: silenceBoundMs(heartbeat),
        lanes,
        silent,
        closed: perLane.reduce((sum, lane) => sum + lane.closed, 0),
        perLane,
        sideBySideLastCloseMs: Math.max(...perLane.map((lane) => lane.lastCloseMs)),
        sideBySidePassMs: Math.max(...perLane.map((lane) => lane.firstPassMs)),
      });
      console.error(JSON.stringify(results.at(-1)));
    }
    return results;
  } finally {
    await standIn.close();
    raw.destroy();
    await dynamo.close();
  }
}

async function runLane(
  sweeper: ReturnType<typeof sweeperRunner>,
  standIn: Awaited<ReturnType<typeof startManagementApiStandIn>>,
  tick: number,
  lane: number,
): Promise<LaneFigures> {
  const before = (await standIn.closes()).length;
  const began = Date.now();
  const run = await sweeper.run(tick, lane);
  const closes = (await standIn.closes()).slice(before);
  const checks = run.summary?.heartbeat?.checked ?? 0;
  const passes = run.summary?.heartbeat?.passesMs ?? [];
  return {
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
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // node bench/silence-lanes.ts <VMs> <interval s>x<misses>:<lanes>[:<lane>,<lane>...] ...
  // e.g. node bench/silence-lanes.ts 100000 20x3:3 10x3:6 5x2:16:0,1,15
  const [vms, ...specs] = process.argv.slice(2);
  const settings = specs.map((spec): LaneSetting => {
    const [beat = '10x3', lanes = '1', only] = spec.split(':');
    const [interval, misses] = beat.split('x').map(Number);
    return {
      heartbeat: { intervalMs: (interval ?? 10) * 1000, misses: misses ?? 3 },
      lanes: Number(lanes),
      ...(only ? { only: only.split(',').map(Number) } : {}),
    };
  });
  console.log(JSON.stringify(await measureSilenceLanes(Number(vms ?? 100_000), settings), null, 2));
}
