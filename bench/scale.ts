import { setTimeout as sleep } from 'node:timers/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local-server.ts';
import { DEFAULTS } from '../lib/config.ts';
import type { ObjectRef } from '../lib/domain/model.ts';
import type { LivenessAnswer } from '../lib/registration/liveness.ts';
import { runSweep } from '../lib/registration/sweep.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { DynamoDbRegistryStore } from '../lib/store/dynamodb-registry-store.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { entryKey } from '../lib/store/item-codec.ts';
import { itemSize } from '../lib/store/item-size.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { connectBenchVm, inBatches } from './bench-entries.ts';
import { measureStreamProjection } from './projection.ts';

/**
 * The registrar at fleet size, with its real code against DynamoDB Local (or dynalite):
 *
 * 1. Liveness and sweeps. N VMs connected over the last 108 minutes (as rotation spreads
 *    them), NAMESPACE_SIZE to a namespace; 20 of them, spread over the check order, crash at
 *    the start (their `$disconnect` is lost). Then one sweeper run per simulated minute, each
 *    a real `runSweep` with the deployed policy and fail static, against a stand-in for API
 *    Gateway's `GET @connections` that answers after 25 ms (real time: the 32 lanes overlap as
 *    they would) and counts calls. A run stops where the deployed one would: 45 s of real time
 *    (the 50 s timeout less the 5 s margin). Measured: the share of connected VMs checked
 *    within the first liveness interval, the longest a crashed VM stayed registered, the
 *    longest run.
 * 2. Mass departure. Every VM's last connection drops within one simulated minute (an AZ
 *    event), the namespaces mixed evenly over the minute: the real `leave` write for each, counted on the wire per partition key and
 *    simulated second, in WCU by item size (an update costs the larger of the item before and
 *    after; the entry's size is read from the table). Then the zone counters must equal the
 *    truth.
 *
 * The simulated clock is the registrar's `now`; the durations (API calls, DynamoDB requests,
 * the run deadline) are real, on this machine.
 */
export interface ScaleResult {
  N: number;
  livenessCoveragePct: number;
  worstCrashedStayMinutes: number;
  longestRunSeconds: number;
  sweeperTimeoutSeconds: number;
  maxPartitionWcuPerSecond: number;
  /**
   * Registry reads of a projector stream batch per changed entry, in a namespace of 1,000
   * (bench/projection.ts, measureStreamProjection: the Kubernetes API is a stand-in).
   */
  projectorReadsPerChangedEntry: number;
  countersExact: boolean;
  /**
   * docs/cost.md's model per 1,000 VMs a month: the per-VM part ($37.05), the fixed part
   * ($22.40) shared by the fleet, and the sweeper's Lambda time at the longest run measured.
   */
  costPer1000VmsUsd: number;
  managementCallsPerVmPerHour: number;
  hottestKey: string;
  backend: string;
}

const MINUTE = 60_000;
const NAMESPACE_SIZE = 20_000;
const CRASHED = 20;
const CHECK_LATENCY_MS = 25;
const SWEEPER_TIMEOUT_S = 50;
const RUN_BUDGET_MS = (SWEEPER_TIMEOUT_S - 5) * 1000;

export async function measureScale(
  vms: number,
  options: { backend?: 'dynamodb-local' | 'dynalite'; log?: (line: string) => void } = {},
): Promise<ScaleResult> {
  const backend = options.backend ?? 'dynamodb-local';
  const log = options.log ?? (() => {});
  const dynamo = backend === 'dynalite' ? await startDynalite() : await startDynamoDbLocal();
  const raw: DynamoDBClient = createDynamoDbClient({
    region: 'us-east-1',
    endpoint: dynamo.endpoint,
  });
  try {
    await ensureTable(raw, 'scale');
    const client = documentClientFor(raw);
    const store = new DynamoDbRegistryStore(client, 'scale');
    const start = Date.UTC(2026, 10, 24, 12);
    const namespaceOf = (i: number) => `ns-${Math.floor(i / NAMESPACE_SIZE)}`;
    const seeded = Date.now();
    const refs: ObjectRef[] = new Array(vms);
    // Connect times spread over 108 minutes, in an order unrelated to i.
    const connectedAt = (i: number) =>
      start - 1 - Math.floor((((i * 7919) % vms) / vms) * 108 * MINUTE);
    await inBatches(vms, 64, async (i) => {
      refs[i] = (await connectBenchVm(store, i, connectedAt(i), namespaceOf(i))).entry;
    });
    log(`seeded ${vms} entries in ${((Date.now() - seeded) / 1000).toFixed(0)} s`);

    // Crashed VMs: spread over the order of their connects, so some are checked last.
    const crashed = new Set(
      Array.from({ length: CRASHED }, (_, k) => `c${Math.floor(((k + 0.5) * vms) / CRASHED)}`),
    );
    const checkedInRun = new Map<string, number>();
    const rotatedInRun = new Map<string, number>();
    let calls = 0;
    let run = 0;
    const liveness = {
      check: async (connectionId: string): Promise<LivenessAnswer> => {
        calls += 1;
        if (!checkedInRun.has(connectionId)) checkedInRun.set(connectionId, run);
        await sleep(CHECK_LATENCY_MS);
        return crashed.has(connectionId) ? 'gone' : 'alive';
      },
    };
    const policy = {
      gracePeriodMs: 5 * MINUTE,
      maxConnectionAgeMs: 120 * MINUTE,
      livenessIntervalMs: 5 * MINUTE,
      sweepIntervalMs: MINUTE,
    };
    await store.setLivenessMark(start);
    const crashedRefs = [...crashed].map((id) => refs[Number(id.slice(1))] as ObjectRef);
    const goneAt = new Map<string, number>();
    let longestRunMs = 0;
    const runs = 13;
    for (run = 1; run <= runs; run++) {
      const now = start + run * MINUTE;
      // Rotations go on (each agent reconnects every 90-108 minutes): ~N/108 connects a minute,
      // which also tell fail static that connects work.
      await inBatches(Math.ceil(vms / 108), 64, async (k) => {
        const i = (k * 108 + run) % vms;
        if (crashed.has(`c${i}`)) return;
        await connectBenchVm(store, i, now - 1_000, namespaceOf(i));
        if (!rotatedInRun.has(`c${i}`)) rotatedInRun.set(`c${i}`, run);
      });
      const began = Date.now();
      const result = await runSweep(store, {
        now,
        policy,
        maxDeletes: 2_000,
        deletesPerSecond: DEFAULTS.sweepDeletesPerSecond,
        liveness,
        connectSettleMs: 30_000,
        outOfTime: () => Date.now() - began > RUN_BUDGET_MS,
        failStatic: {
          threshold: 0.55,
          windowMs: 5 * MINUTE,
          secondaryDeletesPerSecond: 0.1,
          holdBoundMs: 60 * MINUTE,
          sweepIntervalMs: MINUTE,
        },
      });
      const took = Date.now() - began;
      longestRunMs = Math.max(longestRunMs, took);
      log(
        `run ${run}: ${result.livenessChecked} checked, ${result.deleted.length} deleted, ${(took / 1000).toFixed(1)} s${result.stoppedEarly ? ', stopped early' : ''}`,
      );
      for (const ref of crashedRefs) {
        const key = `${ref.namespace}/${ref.name}`;
        if (goneAt.has(key)) continue;
        if (!(await store.getEntry(ref))) goneAt.set(key, run);
      }
    }
    // Every connected VM is due once in any 5 consecutive runs: runs 1-5 must check each, or
    // see it connect anew (a rotation proves it alive and moves its next check).
    const covered = new Set(
      [...checkedInRun, ...rotatedInRun].filter(([, r]) => r <= 5).map(([id]) => id),
    );
    const coverage = (100 * covered.size) / vms;
    const worstStay = Math.max(
      ...crashedRefs.map(
        (ref) => goneAt.get(`${ref.namespace}/${ref.name}`) ?? Number.POSITIVE_INFINITY,
      ),
    );

    // 2. Mass departure within one simulated minute.
    // In an order unrelated to the namespaces: every second of the minute sees VMs of each.
    const survivors = Array.from({ length: vms }, (_, i) => i)
      .filter((i) => !crashed.has(`c${i}`))
      .sort((a, b) => ((a * 7919) % vms) - ((b * 7919) % vms));
    const sample = await client.send(
      new GetCommand({ TableName: 'scale', Key: entryKey(refs[1] as ObjectRef) }),
    );
    const entryWcu = Math.ceil(itemSize(sample.Item ?? {}) / 1024);
    const counter = countRequests(client);
    const secondOf = new Map<string, number>();
    await inBatches(survivors.length, 64, async (k) => {
      const i = survivors[k] as number;
      const second = Math.floor((k * 60) / survivors.length);
      const ref = refs[i] as ObjectRef;
      secondOf.set(`${ref.namespace}/${ref.name}`, second);
      await store.leave({
        connectionId: `c${i}`,
        entry: ref,
        at: start + 20 * MINUTE + second * 1000,
        departure: 'abnormal',
      });
    });
    // Per key and simulated second, in WCU. An entry write's second is its VM's; a counter
    // write names the entry whose transition it counts in its `:op` (`<ns>/<name>@<rev>:...`).
    const wcu = new Map<string, number>();
    let currentSecond = 0;
    for (const { command, input } of counter.requests()) {
      if (!['UpdateItem', 'PutItem', 'DeleteItem'].includes(command)) continue;
      const key = input.Key as { pk?: string; sk?: string } | undefined;
      const pk = key?.pk ?? String((input.Item as { pk?: string } | undefined)?.pk);
      if (pk.startsWith('NS#')) {
        currentSecond = secondOf.get(`${pk.slice(3)}/${String(key?.sk).slice(3)}`) ?? currentSecond;
      }
      const op = (input.ExpressionAttributeValues as { ':op'?: unknown } | undefined)?.[':op'];
      if (pk.startsWith('ZONE') && typeof op === 'string') {
        currentSecond = secondOf.get(op.slice(0, op.indexOf('@'))) ?? currentSecond;
      }
      const cost = pk.startsWith('NS#') ? entryWcu : 1;
      const slot = `${pk}@${currentSecond}`;
      wcu.set(slot, (wcu.get(slot) ?? 0) + cost);
      // The sweep index (projection ALL) is written too when the entry's index key moves:
      // out of its C# shard, into the D# shard of the same number, each the entry's size.
      const values = input.ExpressionAttributeValues as Record<string, unknown> | undefined;
      const state = values?.[':sweepState'];
      if (pk.startsWith('NS#') && typeof state === 'string' && state.startsWith('D#')) {
        for (const indexKey of [`index ${state}`, `index C#${state.slice(2)}`]) {
          const indexSlot = `${indexKey}@${currentSecond}`;
          wcu.set(indexSlot, (wcu.get(indexSlot) ?? 0) + entryWcu);
        }
      }
    }
    let hottest = ['', 0] as [string, number];
    for (const [slot, units] of wcu) if (units > hottest[1]) hottest = [slot, units];
    const zones = await store.zoneCounts();
    const connected = zones.reduce((sum, z) => sum + z.connected, 0);
    const away = zones.reduce((sum, z) => sum + z.away, 0);
    const countersExact = connected === 0 && away === survivors.length;
    return {
      N: vms,
      livenessCoveragePct: Number(coverage.toFixed(1)),
      worstCrashedStayMinutes: worstStay,
      longestRunSeconds: Number((longestRunMs / 1000).toFixed(1)),
      sweeperTimeoutSeconds: SWEEPER_TIMEOUT_S,
      maxPartitionWcuPerSecond: hottest[1],
      projectorReadsPerChangedEntry: (await measureStreamProjection(1_000))
        .registryReadsPerChangedEntry,
      countersExact,
      costPer1000VmsUsd: costPer1000Vms(vms, longestRunMs / 1000),
      managementCallsPerVmPerHour: Number(((calls / vms) * (60 / runs)).toFixed(1)),
      hottestKey: hottest[0].replace(/@\d+$/, ''),
      backend,
    };
  } finally {
    raw.destroy();
    await dynamo.close();
  }
}

/** docs/cost.md, "Per 1,000 VMs per month", with the sweeper's measured run time. */
export function costPer1000Vms(vms: number, sweeperRunSeconds: number): number {
  const perVm = 37.05; // per 1,000 VMs: connection minutes, messages, Lambda, DynamoDB (the address claim included), logs
  const fixed = 22.4; // metrics, alarms, dashboard
  const sweeperGbSeconds = 43_200 * sweeperRunSeconds * 0.5;
  const sweeper = sweeperGbSeconds * 0.0000133334;
  return Number((perVm + ((fixed + sweeper) * 1000) / vms).toFixed(2));
}
