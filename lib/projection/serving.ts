import {
  type EntryRecord,
  effectiveHealth,
  isAutoRegistered,
  MAINTENANCE_REASON,
} from '../domain/entry-record.ts';
import { type EpochMillis, HEALTHY_CONDITION } from '../domain/model.ts';

/** Whether traffic may go to an entry, and why: Linkerd's Ready and EndpointSlice `ready`. */
export interface ServingState {
  ready: boolean;
  /** CamelCase, as Kubernetes condition reasons are. */
  reason:
    | 'Connected'
    | 'Healthy'
    | 'Unhealthy'
    | 'Disconnected'
    | 'NotProbedYet'
    | 'Static'
    | typeof MAINTENANCE_REASON;
  message?: string;
  /**
   * When the state last changed, derived from registry times only (never "now"), so that two
   * projectors, or one that runs twice, compute the same condition and write nothing new.
   */
  since?: EpochMillis;
}

/**
 * An entry serves when it is connected and healthy:
 * - auto-registered and disconnected (the sweeper has not deleted it yet): not ready;
 * - its group has a probe and no report arrived yet: not ready, as istiod treats an entry with
 *   `health-checks-enabled` before its first probe;
 * - no probe: connected is enough;
 * - hand-made entries have no connection: they serve unless a Healthy condition says False;
 * - cordoned by an operator (`registrar cordon`): never, whatever else is true, until uncordon.
 *   Not even for a Service with `publishNotReadyAddresses`: the operator took it out on purpose.
 */
export function servingState(record: EntryRecord): ServingState {
  if (record.cordon) {
    return {
      ready: false,
      reason: MAINTENANCE_REASON,
      message: record.cordon.message,
      since: record.cordon.at,
    };
  }
  if (!isAutoRegistered(record)) {
    const healthy = record.entry.status?.conditions?.find((c) => c.type === HEALTHY_CONDITION);
    if (record.health?.status === 'False' || healthy?.status === 'False') {
      return {
        ready: false,
        reason: 'Unhealthy',
        message: record.health?.message ?? healthy?.message,
      };
    }
    return { ready: true, reason: 'Static' };
  }
  const connectedAt = record.connection?.connectedAt;
  if (connectedAt === undefined) {
    return { ready: false, reason: 'Disconnected', since: record.connection?.disconnectedAt };
  }
  const health = effectiveHealth(record);
  if (health === undefined) {
    return record.healthChecksEnabled
      ? { ready: false, reason: 'NotProbedYet', since: connectedAt }
      : { ready: true, reason: 'Connected', since: connectedAt };
  }
  const since = Math.max(connectedAt, health.lastTransitionTime);
  if (health.status === 'True') return { ready: true, reason: 'Healthy', since };
  return { ready: false, reason: 'Unhealthy', message: health.message, since };
}
