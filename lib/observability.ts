import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * The one Logger and the one Metrics of every function.
 *
 * Locally and in tests, set POWERTOOLS_METRICS_DISABLED=true (or POWERTOOLS_DEV=true) to
 * keep EMF lines off stdout, and POWERTOOLS_LOG_LEVEL to quiet logs; Powertools reads both
 * when these objects are created, i.e. when this module is first imported.
 */
export const SERVICE_NAME = 'workload-registrar';
export const METRICS_NAMESPACE = 'WorkloadRegistrar';

// Powertools keeps per-invocation state in Lambda's InvokeStore whenever this variable is set.
// A process started by one running the local runtime (which sets it for its own invocations)
// inherits the variable but has no store, and Powertools would throw on its first use: outside
// Lambda, without a store, the variable is not ours to honour.
if (
  process.env.AWS_LAMBDA_MAX_CONCURRENCY !== undefined &&
  process.env.AWS_LAMBDA_FUNCTION_NAME === undefined &&
  (globalThis as { awslambda?: { InvokeStore?: unknown } }).awslambda?.InvokeStore === undefined
) {
  delete process.env.AWS_LAMBDA_MAX_CONCURRENCY;
}

export const logger = new Logger({ serviceName: SERVICE_NAME });

/** One counter per outcome (DESIGN: observability). */
export const METRIC = {
  registered: 'Registered',
  reconnected: 'Reconnected',
  unregistered: 'Unregistered',
  healthTransitions: 'HealthTransitions',
  swept: 'Swept',
  /** Holders API Gateway said were gone (their `$disconnect` was lost), dropped. */
  phantomHolders: 'PhantomHoldersDropped',
  /**
   * Holders open but silent past their group's heartbeat (interval x misses), dropped and
   * closed by the sweeper: VMs hung or cut off while their connection stayed open. Emitted
   * every run, zero included; the log line names the namespaces.
   */
  silentHolders: 'SilentHoldersDropped',
  /** Connected entries whose holders the sweeper checked with API Gateway. */
  livenessChecks: 'LivenessChecks',
  /**
   * Liveness checks API Gateway could not answer (throttled, access denied, unreachable): the
   * holder is kept, and a lost `$disconnect` goes unnoticed until a check lands.
   */
  livenessUnknown: 'LivenessUnknown',
  /** Sweeper runs that stopped at their deadline with work left (the next run goes on). */
  sweepStoppedEarly: 'SweepStoppedEarly',
  /** Fail static: deletions held back this run (entries away abnormally while held), by Zone. */
  sweepHeld: 'SweepHeld',
  /** Fail static: due deletions deferred by a disrupted zone's secondary rate, by Zone. */
  sweepSlowed: 'SweepSlowed',
  /** Fail static: deletions made after a hold outlived its bound (the alarm stays raised). */
  sweepHoldExpired: 'SweepHoldExpired',
  /**
   * Fail static: cells (namespaces in a zone) slowed, and held, at this run, by Zone: the
   * word `registrar sweep status` shows per cell (lib/domain/cell-mode.ts), as a number.
   */
  cellsSlowed: 'SweepCellsSlowed',
  cellsHeld: 'SweepCellsHeld',
  /**
   * Heartbeat lanes (lib/domain/heartbeat-lanes.ts), by `Lane`: the holders a lane's run
   * checked; how long each pass over its whole share took; and passes that took longer than
   * their period, half the shortest heartbeat bound (1 each: the next pass slot was skipped,
   * so a silent VM in that share may be found late; add lanes). Emitted by every lane's run
   * while heartbeat groups exist.
   */
  heartbeatChecks: 'HeartbeatChecks',
  heartbeatPassSeconds: 'HeartbeatPassSeconds',
  heartbeatPassesLate: 'HeartbeatPassesLate',
  /** Entries removed because EC2 reported their instance shutting down or terminated. */
  instanceEntriesRemoved: 'InstanceEntriesRemoved',
  /** Entries set Healthy False / Draining by their agent's drain. */
  drained: 'Drained',
  /**
   * A request the registrar refused because of the caller (bad token, invalid field, unknown
   * group, conflict): an outcome, never a page. By `Reason` (the error code) and in total.
   */
  refused: 'Refused',
  /** A failure of the registrar or a dependency (the table, the gateway): pages. */
  faults: 'Faults',
} as const;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

export const metrics = new Metrics({
  namespace: METRICS_NAMESPACE,
  serviceName: SERVICE_NAME,
  logger: {
    debug: (...content) => logger.debug(...(content as [string])),
    info: (...content) => logger.info(...(content as [string])),
    error: (...content) => logger.error(...(content as [string])),
    // An invocation with no outcome to count (a describe, an ignored health report) is
    // normal here; Powertools' "No application metrics to publish" would fire on each one.
    warn: (...content) => {
      const [first] = content;
      if (typeof first === 'string' && first.startsWith('No application metrics')) return;
      logger.warn(...(content as [string]));
    },
  },
});

export function countMetric(name: MetricName, value = 1): void {
  if (value > 0) metrics.addMetric(name, MetricUnit.Count, value);
}

/** A count emitted even when zero: a run that swept nothing is a data point, not a gap. */
export function recordCount(name: MetricName, value: number): void {
  metrics.addMetric(name, MetricUnit.Count, value);
}

/**
 * Counts a refusal: once with its `Reason` (the error code, e.g. `Unauthenticated`) for the
 * dashboard, once in the service total that the refusal-spike alarm watches. A single metric
 * carries its own `Reason` dimension without adding it to the outcome counters flushed at the
 * end of the invocation.
 */
export function countRefusal(reason: string): void {
  countByReason(METRIC.refused, reason);
  for (const listener of refusalListeners) listener(reason);
}

const refusalListeners = new Set<(reason: string) => void>();

/**
 * Hears every refusal counted in this process, by reason: the local runtime keeps its own
 * counts of them for `registrar dashboard` (on AWS the dashboard reads the `Refused` metric).
 * Nothing is written on the refusal path. Returns the function that stops listening.
 */
export function onRefusal(listener: (reason: string) => void): () => void {
  refusalListeners.add(listener);
  return () => {
    refusalListeners.delete(listener);
  };
}

/** Counts a fault: by `Reason` (the error's name, e.g. `TimeoutError`) and in total. */
export function countFault(reason: string): void {
  countByReason(METRIC.faults, reason);
}

/**
 * A count by `Zone` (region/zone) and in the service total: one line per zone on the
 * dashboard, one total for the alarm. Emitted even when zero, so a run is a data point.
 */
export function recordByZone(name: MetricName, byZone: Record<string, number>): void {
  let total = 0;
  for (const [zone, value] of Object.entries(byZone)) {
    const single = metrics.singleMetric();
    single.addDimension('Zone', zone);
    single.addMetric(name, MetricUnit.Count, value);
    total += value;
  }
  metrics.addMetric(name, MetricUnit.Count, total);
}

/** One value with its heartbeat lane as the `Lane` dimension (16 lanes at most: 16 series). */
export function recordByLane(
  name: MetricName,
  lane: number,
  value: number,
  unit: 'Count' | 'Seconds' = 'Count',
): void {
  const single = metrics.singleMetric();
  single.addDimension('Lane', String(lane));
  single.addMetric(name, unit === 'Seconds' ? MetricUnit.Seconds : MetricUnit.Count, value);
}

function countByReason(name: MetricName, reason: string): void {
  const single = metrics.singleMetric();
  single.addDimension('Reason', reason);
  single.addMetric(name, MetricUnit.Count, 1);
  metrics.addMetric(name, MetricUnit.Count, 1);
}
