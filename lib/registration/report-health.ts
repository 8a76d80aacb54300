import { NotFoundError } from '../domain/errors.ts';
import type { HealthReport, HealthResult, RegistryStore } from '../store/registry-store.ts';

export type ReportHealthResult = Exclude<HealthResult, { outcome: 'unknown-connection' }>;

/**
 * Sets the entry's `Healthy` condition from an agent's report. The store ignores a report
 * from any connection but the entry's newest (after a make-before-break reconnect the old
 * connection's last words must not win) and one older than the stored `lastProbeTime`.
 */
export async function reportHealth(
  store: Pick<RegistryStore, 'reportHealth'>,
  report: HealthReport,
): Promise<ReportHealthResult> {
  // The condition carries a message only while unhealthy: a stale failure reason on a
  // healthy entry would mislead whoever reads it.
  const { message: _message, ...rest } = report;
  const effective: HealthReport = report.healthy ? rest : report;
  const result = await store.reportHealth(effective);
  if (result.outcome === 'unknown-connection') {
    throw new NotFoundError('this connection registered no WorkloadEntry; reconnect to register');
  }
  return result;
}
