import { sweeperSizing } from '../infra/constructs/sweeper-sizing.ts';
import { buildRegistration } from '../lib/domain/build-entry.ts';
import { entryOrigin } from '../lib/domain/entry-name.ts';
import { HEARTBEAT_ANNOTATIONS, type Heartbeat } from '../lib/domain/heartbeat.ts';
import { toldAtConnect } from '../lib/domain/holder-heartbeat.ts';
import type { ObjectRef, WorkloadGroup } from '../lib/domain/model.ts';
import type { RegistrarStore } from '../lib/registrar-store.ts';
import { acknowledgeHeartbeat } from '../lib/registration/acknowledge-heartbeat.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { benchGroup, benchIp, inBatches } from './bench-entries.ts';
import { startDynaliteProcess } from './dynalite-process.ts';
import { startManagementApiStandIn } from './management-api-stand-in.ts';
import { sweeperRunner } from './sweeper-runner.ts';

export interface HeartbeatChangeRun {
  vms: number;
  change: string;
  /** From the apply to the first notice, to the last, and to the last acknowledgement recorded. */
  firstNoticeMs: number;
  lastNoticeMs: number;
  inForceMs: number;
  /** Notices sent (a VM told twice, when its acknowledgement had not landed by the next pass). */
  notices: number;
  acknowledged: number;
  /** The sweeper run's wall time and CPU (this process; the acknowledgements' CPU is apart). */
  runWallMs: number;
}

/**
 * Issue 44: the time from a heartbeat change to in force on `vms` live VMs. The group is at
 * `from`; a scheduled sweeper run (the deployed handler, real time, Lambda's deadline) is making
 * its passes when the operator applies `to`. The sweeper sees the change (the count of heartbeat
 * changes, read every 5 s between passes), passes over the group and tells every VM (POST
 * @connections to the bench's stand-in of API Gateway's management API, 25 ms a call); each
 * VM's agent acknowledges as soon as the stand-in has its notice (the message function's use
 * case, lib/registration/acknowledge-heartbeat.ts, 32 at a time as 32 concurrent Lambda
 * invocations would, over the same dynalite process). In force: every VM's acknowledgement
 * recorded on its holder.
 */
export async function measureHeartbeatChange(
  vms = 10_000,
  from: Heartbeat = { intervalMs: 10_000, misses: 3 },
  to: Heartbeat = { intervalMs: 5_000, misses: 2 },
): Promise<HeartbeatChangeRun> {
  const dynamo = await startDynaliteProcess();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const standIn = await startManagementApiStandIn(25);
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const store = composeRegistry(client, 'bench');
    const group = benchGroup('bench');
    const setting = (heartbeat: Heartbeat) => {
      group.metadata.annotations = {
        [HEARTBEAT_ANNOTATIONS.interval]: `${heartbeat.intervalMs}ms`,
        [HEARTBEAT_ANNOTATIONS.misses]: String(heartbeat.misses),
      };
      return store.applyGroup(group);
    };
    await setting(from);
    const sweeper = sweeperRunner({
      client,
      tableName: 'bench',
      connectionsUrl: standIn.url,
      timeoutS: sweeperSizing({ sweepRateMinutes: 1 }).timeoutS,
    });
    // The stand-in answers with its own clock: the simulated run times are now's.
    const start = Date.now();
    await sweeper.run(start - 60_000);
    const entries = await connectAll(store, group, vms, start - 50_000, from);
    await standIn.postedSince();

    // A run making its passes; the change lands 2 s into it.
    const run = sweeper.run(Date.now());
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const appliedAt = Date.now();
    await setting(to);
    const acked = new Set<string>();
    let notices = 0;
    let firstNotice = Number.NaN;
    let lastNotice = Number.NaN;
    let lastAck = Number.NaN;
    const deadline = appliedAt + 120_000;
    while (acked.size < vms && Date.now() < deadline) {
      const posts = await standIn.postedSince();
      notices += posts.length;
      for (const post of posts) {
        if (Number.isNaN(firstNotice)) firstNotice = post.at;
        lastNotice = post.at;
      }
      const fresh = [...new Set(posts.map((p) => p.id))].filter((id) => !acked.has(id));
      await inBatches(fresh.length, 32, async (k) => {
        const id = fresh[k] as string;
        const entry = entries.get(id) as ObjectRef;
        await acknowledgeHeartbeat(
          store,
          { connectionId: id, carried: entry },
          { intervalSeconds: to.intervalMs / 1000, misses: to.misses },
          Date.now(),
        );
        acked.add(id);
        lastAck = Date.now();
      });
      if (fresh.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const finished = await run;
    return {
      vms,
      change: `${from.intervalMs / 1000}s x ${from.misses} -> ${to.intervalMs / 1000}s x ${to.misses}`,
      firstNoticeMs: firstNotice - appliedAt,
      lastNoticeMs: lastNotice - appliedAt,
      inForceMs: acked.size === vms ? lastAck - appliedAt : Number.NaN,
      notices,
      acknowledged: acked.size,
      runWallMs: Math.round(finished.wallMs),
    };
  } finally {
    await standIn.close();
    raw.destroy();
    await dynamo.close();
  }
}

/** `vms` VMs of agents of 0.3, told `heartbeat` at their connect; their entries by connection. */
async function connectAll(
  store: RegistrarStore,
  group: WorkloadGroup,
  vms: number,
  connectedAt: number,
  heartbeat: Heartbeat,
): Promise<Map<string, ObjectRef>> {
  const entries = new Map<string, ObjectRef>();
  await inBatches(vms, 64, async (i) => {
    const ip = benchIp(i);
    const built = buildRegistration(
      group,
      { group: 'bench', namespace: 'bench', ips: [ip], labels: {} },
      connectedAt,
    );
    const connectionId = `c${i}`;
    await store.connect({
      ...built,
      origin: entryOrigin('bench', ip),
      mayCreate: true,
      recordConnection: false,
      groupGeneration: 1,
      connectionId,
      connectedAt,
      controller: 'bench',
      identity: { principal: 'token:bench', namespace: 'bench' },
      agentVersion: '0.3.0',
      heartbeat: toldAtConnect(heartbeat, '0.3.0', connectedAt),
    });
    entries.set(connectionId, built.entry.metadata);
  });
  return entries;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(
    JSON.stringify(await measureHeartbeatChange(Number(process.argv[2] ?? 10_000)), null, 2),
  );
}
