import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { countChanges, type ProjectionReport } from './report.ts';

/** Metric names of the projector (namespace WorkloadRegistrar, dimension service). */
export const PROJECTION_METRIC = {
  created: 'ProjectionCreated',
  updated: 'ProjectionUpdated',
  statusUpdated: 'ProjectionStatusUpdated',
  deleted: 'ProjectionDeleted',
  conflicts: 'ProjectionConflicts',
  errors: 'ProjectionErrors',
  problems: 'ProjectionProblems',
  unmanaged: 'ProjectionUnmanaged',
  /** Entries whose address the projector refused to write (lib/projection/endpoint-ranges.ts). */
  refusedEndpoints: 'ProjectionRefusedEndpoints',
  duration: 'ProjectionDuration',
} as const;

const ACTION_METRIC = {
  created: PROJECTION_METRIC.created,
  updated: PROJECTION_METRIC.updated,
  'status-updated': PROJECTION_METRIC.statusUpdated,
  deleted: PROJECTION_METRIC.deleted,
} as const;

/**
 * Objects written per kind (a `Kind` dimension, one single metric each), and totals that the
 * alarms watch: errors (requests the API server refused, a CRD missing, the registry
 * unreadable) and problems (entries that cannot be projected). Always emitted, zeros included,
 * so an alarm sees data instead of "missing".
 */
export function recordProjectionMetrics(metrics: Metrics, report: ProjectionReport): void {
  for (const [kind, actions] of Object.entries(countChanges(report))) {
    for (const [action, count] of Object.entries(actions ?? {})) {
      const single = metrics.singleMetric();
      single.addDimension('Kind', kind);
      single.addMetric(
        ACTION_METRIC[action as keyof typeof ACTION_METRIC],
        MetricUnit.Count,
        count,
      );
    }
  }
  metrics.addMetric(PROJECTION_METRIC.conflicts, MetricUnit.Count, report.conflicts);
  metrics.addMetric(PROJECTION_METRIC.errors, MetricUnit.Count, report.errors.length);
  metrics.addMetric(PROJECTION_METRIC.problems, MetricUnit.Count, report.problems.length);
  metrics.addMetric(PROJECTION_METRIC.unmanaged, MetricUnit.Count, report.unmanaged.length);
  metrics.addMetric(PROJECTION_METRIC.refusedEndpoints, MetricUnit.Count, report.refused.length);
  metrics.addMetric(PROJECTION_METRIC.duration, MetricUnit.Milliseconds, report.durationMs);
}
