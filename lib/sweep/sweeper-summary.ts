import type { SweepResult } from '../registration/sweep-result.ts';

/** What one sweeper invocation did: lane 0's sweep, or a heartbeat lane's passes alone. */
export interface SweeperSummary {
  deleted: number;
  conflicts: number;
  candidatesRead: number;
  /** Namespaces with due candidates this run: each had an equal share of it. */
  namespacesWithDue: number;
  livenessChecked: number;
  livenessUnknown: number;
  phantomsDropped: number;
  /** Holders silent past their group's heartbeat, dropped and closed. */
  silentDropped: number;
  stoppedEarly: boolean;
  /** Deletes and liveness checks that failed; the invocation then fails after the rest. */
  failed: number;
  /**
   * Fail static, the fleet's word (lib/domain/cell-mode.ts): normal, slowed, held,
   * hold-expired or released; `skipped` when another run held the sweep lease.
   */
  mode: string;
  held: number;
  slowed: number;
  /** The heartbeat lane this run served, when heartbeat groups exist (heartbeat-lane-run.ts). */
  heartbeat?: {
    lane: number;
    planVersion: number;
    checked: number;
    /** Passes over the lane's whole share that ended in this run, each one's time (ms). */
    passesMs: number[];
    /** Lane 0: lanes that have not run for two sweep intervals (their shares wait). */
    staleLanes?: number[];
    /** Holders checked, by namespace: each tenant's checks, paced by its own groups. */
    checkedByNamespace?: Record<string, number>;
    /** Namespaces asking for more checks a minute than their quota, and their stretch. */
    overQuota?: Record<string, { demand: number; quota: number; stretch: number }>;
  };
}

export const EMPTY_SUMMARY: SweeperSummary = {
  deleted: 0,
  conflicts: 0,
  candidatesRead: 0,
  namespacesWithDue: 0,
  livenessChecked: 0,
  livenessUnknown: 0,
  phantomsDropped: 0,
  silentDropped: 0,
  stoppedEarly: false,
  failed: 0,
  mode: 'normal',
  held: 0,
  slowed: 0,
};

/** The heartbeat lane's part of a summary (lane 0's and the other lanes' alike). */
export function heartbeatOf(result: SweepResult): Pick<SweeperSummary, 'heartbeat'> {
  const report = result.heartbeat;
  if (!report) return {};
  const { lane, planVersion, checked, passesMs, staleLanes, checkedByNamespace, overQuota } =
    report;
  return {
    heartbeat: {
      lane,
      planVersion,
      checked,
      passesMs,
      ...(staleLanes ? { staleLanes } : {}),
      ...(checkedByNamespace ? { checkedByNamespace } : {}),
      ...(overQuota ? { overQuota } : {}),
    },
  };
}
