import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createSweeperHandler, type SweeperSummary } from '../functions/sweeper.ts';
import { MB_PER_VCPU } from '../infra/constructs/sweeper-sizing.ts';
import { lambdaContext } from '../infra/local/gateway-events.ts';
import { ENV, readConfig } from '../lib/config.ts';
import type { Dependencies } from '../lib/dependencies.ts';
import type { EpochMillis } from '../lib/domain/model.ts';
import { ManagementApiLiveness } from '../lib/gateway/management-api-liveness.ts';
import { DynamoDbSweepPolicyStore } from '../lib/store/dynamodb-sweep-policy-store.ts';
import { DynamoDbTokenStore } from '../lib/store/dynamodb-token-store.ts';
import { closerOf } from '../lib/wiring/message.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { notifierOf } from '../lib/wiring/sweeper.ts';
import { NO_CAPABILITIES } from '../test/fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../test/fixtures/sweep-stand-ins.ts';

/** What one sweeper invocation took: its outcome, its wall time and its CPU. */
export interface SweeperRun {
  summary: SweeperSummary | undefined;
  /** The invocation failed (SweepIncompleteError names how many operations failed). */
  error?: string;
  wallMs: number;
  /** CPU of this process during the invocation, every thread (what Lambda's sandbox uses). */
  cpuMs: number;
  /** CPU of the main thread alone (the handler's JavaScript). */
  mainThreadCpuMs: number;
}

export interface SweeperRunner {
  /**
   * One scheduled invocation at simulated time `now`, with a Lambda deadline of `timeoutS`:
   * the sweep (lane 0), or heartbeat lane `lane` (the event its rule sends).
   */
  run(now: EpochMillis, lane?: number): Promise<SweeperRun>;
}

/**
 * The deployed sweeper: `functions/sweeper.ts`'s handler, wired as lib/dependencies.ts wires it
 * on Lambda (the DynamoDB adapter, the management API's SDK client over HTTP to `connectionsUrl`)
 * with the configuration the stack deploys, and a simulated clock; only its run records and the
 * table's schema record are kept in memory (no migration runs in a measured run). The bench's
 * other work (the stand-in, DynamoDB Local) runs in other processes, so this process's CPU
 * during a run is the sweeper's.
 */
export function sweeperRunner(options: {
  client: DynamoDBDocumentClient;
  tableName: string;
  connectionsUrl: string;
  timeoutS: number;
  env?: Record<string, string>;
}): SweeperRunner {
  let now: EpochMillis = 0;
  const config = readConfig({
    [ENV.tableName]: options.tableName,
    [ENV.connectionsUrl]: options.connectionsUrl,
    ...options.env,
  });
  const deps: Dependencies = {
    ...NO_CAPABILITIES,
    config,
    store: composeRegistry(options.client, options.tableName),
    tokens: new DynamoDbTokenStore(options.client, options.tableName),
    // The run records and the table's schema record kept in memory (the bench's runs had none
    // before they were required): its requests and times stay comparable with
    // docs/benchmarks.md's.
    ...sweeperRecordsInMemory(),
    sweepPolicy: new DynamoDbSweepPolicyStore(options.client, options.tableName),
    liveness: new ManagementApiLiveness({
      endpoint: options.connectionsUrl,
      region: config.region,
      local: true,
    }),
    // Connections silent past their heartbeat are closed through the same endpoint, and live
    // agents are told a changed heartbeat (POST) there.
    ...closerOf(config),
    ...notifierOf(config),
    now: () => now,
  };
  const handler = createSweeperHandler(deps);
  return {
    run: async (at, lane = 0) => {
      now = at;
      const context = lambdaContext('registrar-sweeper', config.region, options.timeoutS * 1000);
      const cpu = process.cpuUsage();
      const thread = process.threadCpuUsage();
      const began = performance.now();
      let summary: SweeperSummary | undefined;
      let error: string | undefined;
      try {
        summary = await handler(lane === 0 ? {} : { heartbeatLane: lane }, context);
      } catch (failure) {
        error = failure instanceof Error ? failure.message : String(failure);
      }
      const wallMs = performance.now() - began;
      const used = process.cpuUsage(cpu);
      const usedThread = process.threadCpuUsage(thread);
      return {
        summary,
        ...(error === undefined ? {} : { error }),
        wallMs,
        cpuMs: (used.user + used.system) / 1000,
        mainThreadCpuMs: (usedThread.user + usedThread.system) / 1000,
      };
    },
  };
}

/**
 * The time a run's CPU takes on Lambda at `memoryMb`: Lambda gives CPU in proportion to memory
 * (1,769 MB = one vCPU), so CPU-bound work stretches by 1,769 / memory. Assumes one Lambda vCPU
 * does the work of one core of the machine measured.
 */
export function cpuSecondsAt(cpuMs: number, memoryMb: number): number {
  return cpuMs / 1000 / Math.min(1, memoryMb / MB_PER_VCPU);
}
