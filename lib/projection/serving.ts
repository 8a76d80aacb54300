import {
  type EntryRecord,
  effectiveHealth,
  isAutoRegistered,
  MAINTENANCE_REASON,
} from '../domain/entry-record.ts';
import { ANNOTATIONS, type EpochMillis, HEALTHY_CONDITION } from '../domain/model.ts';

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
  if (!isAutoRegistered(record)) return handMadeServingState(record);
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

/**
 * A hand-made entry has no connection: it serves unless its health says otherwise, read as
 * istiod reads it. A `Healthy: False` (stored, or reported) takes it out; so does its own
 * `health-checks-enabled` annotation without a `Healthy: True`, which istiod treats as a probe
 * that has not passed yet.
 */
function handMadeServingState(record: EntryRecord): ServingState {
  const stored = record.entry.status?.conditions?.find((c) => c.type === HEALTHY_CONDITION);
  const status = record.health?.status ?? stored?.status;
  if (status === 'False') {
    return {
      ready: false,
      reason: 'Unhealthy',
      message: record.health?.message ?? stored?.message,
    };
  }
  const asksForHealth = ISTIO_TRUE.has(
    record.entry.metadata.annotations?.[ANNOTATIONS.healthChecksEnabled] ?? '',
  );
  if (asksForHealth && status !== 'True') return { ready: false, reason: 'NotProbedYet' };
  return { ready: true, reason: 'Static' };
}

/** The spellings istiod's annotation parser (Go's strconv.ParseBool) reads as true. */
const ISTIO_TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
