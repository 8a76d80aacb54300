import { SWEEPER_MEMORY_MB } from '../infra/constructs/sweeper-sizing.ts';
import { type BenchFleet, type MeasuredRun, MINUTE, SWEEPER_TIMEOUT_S } from './scale-fleet.ts';
import { cpuSecondsAt } from './sweeper-runner.ts';

/** Sweeper minutes per scenario: every connected VM is due once in any 5, a crash leaves in 12. */
export const RUNS = 13;

/** The sweeper's CPU per run, and what it means on Lambda at the deployed memory. */
export interface CpuPerRun {
  medianSeconds: number;
  maxSeconds: number;
  mainThreadMaxSeconds: number;
  memoryMb: number;
  /** The longest run's CPU at that memory's share of a vCPU: the run's floor on Lambda. */
  maxSecondsAtMemory: number;
  /** The VMs one sweeper could serve at that memory before CPU alone fills its 45 s. */
  ceilingVms: number;
}

/** `count` VMs spread over the check order (their connect times), so some are checked last. */
export function spreadCrashes(fleet: BenchFleet, count: number, among = fleet.vms) {
  const live = among.filter((vm) => !vm.gone).sort((a, b) => a.connectedAt - b.connectedAt);
  return Array.from(
    { length: count },
    (_, k) => live[Math.floor(((k + 0.5) * live.length) / count)],
  ).filter((vm) => vm !== undefined);
}

/**
 * RUNS sweeper minutes over the fleet. Returns the worst stay of each kind of crashed VM (in
 * minutes, Infinity when one stayed), and the share of live VMs checked (or proven alive by a
 * rotation) within the first liveness interval: every connected VM is due once in any 5
 * consecutive runs.
 */
export async function runMinutes(
  fleet: BenchFleet,
  start: number,
  log: (line: string) => void,
  crashed: Record<string, readonly { ref: { namespace: string; name: string } }[]>,
  live = () => fleet.vms.filter((vm) => !vm.gone),
) {
  const goneAt = new Map<string, number>();
  const rotated = new Map<string, number>();
  const checked = new Set<string>();
  const candidates = new Set(live().map((vm) => `c${vm.index}`));
  for (let run = 1; run <= RUNS; run++) {
    const now = start + run * MINUTE;
    const measured = await fleet.minute(run, now, rotated);
    if (run <= 5) for (const id of measured.checkedIds) checked.add(id);
    log(
      `run ${run}: ${measured.summary?.livenessChecked ?? '?'} checked, ${measured.summary?.deleted ?? '?'} deleted (${measured.summary?.namespacesWithDue ?? '?'} namespaces), ${(measured.wallMs / 1000).toFixed(1)} s, CPU ${(measured.cpuMs / 1000).toFixed(2)} s, ${measured.queries} queries${measured.summary?.stoppedEarly ? ', stopped early' : ''}${measured.error ? `, FAILED: ${measured.error}` : ''}`,
    );
    for (const vm of Object.values(crashed).flat()) {
      const key = `${vm.ref.namespace}/${vm.ref.name}`;
      if (!goneAt.has(key) && !(await fleet.store.getEntry(vm.ref))) goneAt.set(key, run);
    }
  }
  for (const [id, run] of rotated) if (run <= 5) checked.add(id);
  const covered = [...candidates].filter((id) => checked.has(id)).length;
  const worst = (vms: readonly { ref: { namespace: string; name: string } }[]) =>
    Math.max(0, ...vms.map((vm) => goneAt.get(`${vm.ref.namespace}/${vm.ref.name}`) ?? Infinity));
  return {
    coveragePct: round((100 * covered) / Math.max(1, candidates.size)),
    lost: worst(crashed.lost ?? []),
    closed: worst(crashed.closed ?? []),
  };
}

export function cpuPerRun(runs: readonly MeasuredRun[], vms: number): CpuPerRun {
  const cpu = runs.map((run) => run.cpuMs);
  const max = Math.max(...cpu);
  const atMemory = cpuSecondsAt(max, SWEEPER_MEMORY_MB);
  const budget = SWEEPER_TIMEOUT_S - 5;
  return {
    medianSeconds: round(median(cpu) / 1000),
    maxSeconds: round(max / 1000),
    mainThreadMaxSeconds: round(Math.max(...runs.map((run) => run.mainThreadCpuMs)) / 1000),
    memoryMb: SWEEPER_MEMORY_MB,
    maxSecondsAtMemory: round(atMemory),
    ceilingVms: Math.round((vms * budget) / Math.max(atMemory, 1e-9) / 1000) * 1000,
  };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export function round(value: number): number {
  return Number(value.toFixed(1));
}
