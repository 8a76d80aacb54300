import type { Config } from '../config.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { SweeperTick } from '../protocol/sweeper-event.ts';
import type { ConnectionLiveness } from '../registration/liveness.ts';
import type { Migration, SchemaStore } from '../registration/schema-store.ts';
import type { SweepOptions, SweepStore } from '../registration/sweep-options.ts';
import type { SweepLeaseStore } from './sweep-lease-store.ts';
import type { SweepPolicyStore } from './sweep-policy-store.ts';
import type { SweepRunStore } from './sweep-run-store.ts';

/**
 * What one sweeper invocation is given, lane 0's sweep and heartbeat lane k's alike
 * (lib/wiring/sweeper.ts builds it from the environment; tests over dynalite and a fixed
 * clock). The optional members are API Gateway's, which a runtime without a management API
 * has not (lib/function-dependencies.ts says what each one's absence means); every store is
 * required: a missing one fails to compile, it never turns a part of the run off.
 */
export interface SweepRunDependencies {
  config: Pick<Config, 'sweep' | 'authMode' | 'connectSettleMs' | 'heartbeatLanes'>;
  store: SweepStore & SweepLeaseStore;
  liveness?: ConnectionLiveness;
  closeConnection?: SweepOptions['closeConnection'];
  notifyConnection?: SweepOptions['notifyConnection'];
  sweepPolicy: SweepPolicyStore;
  sweepRuns: SweepRunStore;
  schema: SchemaStore;
  migrations: readonly Migration[];
  now: () => EpochMillis;
}

/** One invocation: its lane and tick (the event's), who it is, and the time it has left. */
export interface SweeperInvocation extends SweeperTick {
  /** The lease's holder: the invocation's request id. */
  holder: string;
  /** Milliseconds before the invocation's deadline (Lambda's getRemainingTimeInMillis). */
  remainingMs: () => number;
}

/**
 * Time kept back from the invocation's deadline: one paced delete or one liveness check (a few
 * requests, each retried by the SDK) fits well inside it, and the metrics still flush.
 */
export const DEADLINE_MARGIN_MS = 5_000;

/** True once the invocation must stop and leave the rest to the next run. */
export function outOfTime(invocation: SweeperInvocation): () => boolean {
  return () => invocation.remainingMs() < DEADLINE_MARGIN_MS;
}

/**
 * What every lane's run is given (lane 0 adds its deletions and fail static): the policy, the
 * deadline, API Gateway's word and hands, and repeated heartbeat passes for one interval.
 */
export function laneOptions(
  deps: SweepRunDependencies,
  invocation: SweeperInvocation,
  now: EpochMillis,
): SweepOptions {
  const { sweep } = deps.config;
  return {
    now,
    policy: sweep,
    maxDeletes: 0,
    deletesPerSecond: sweep.deletesPerSecond,
    outOfTime: outOfTime(invocation),
    liveness: deps.liveness,
    closeConnection: deps.closeConnection,
    notifyConnection: deps.notifyConnection,
    repeatHeartbeatPasses: true,
    connectSettleMs: deps.config.connectSettleMs,
    heartbeatLanes: deps.config.heartbeatLanes,
    tickAt: invocation.tickAt,
  };
}
