import type { AgentGiven } from './agent-given.ts';
import type { DepartureKind } from './disruption.ts';
import type { EntryEvent } from './entry-events.ts';
import { derivedEntryUid } from './entry-uid.ts';
import type { HolderBeat } from './holder-heartbeat.ts';
import {
  ANNOTATIONS,
  type Condition,
  type EpochMillis,
  HEALTHY_CONDITION,
  ISTIO_API_VERSION,
  toRfc3339,
  type VerifiedIdentity,
  type WorkloadEntry,
} from './model.ts';

/**
 * Connection state of an auto-registered entry. It is kept apart from the Istio object because
 * it changes on every connect and disconnect while the object itself never does; the system
 * annotations are rendered from it.
 */
export interface ConnectionState {
  /** Which control plane instance holds the entry (`istio.io/workloadController`). */
  controller: string;
  /** Set while connected: the time of the newest connect. */
  connectedAt?: EpochMillis;
  /** Set while disconnected: when the last live connection went away. */
  disconnectedAt?: EpochMillis;
  /** Set while disconnected: how the last holder went away (fail static; see disruption.ts). */
  departure?: DepartureKind;
  /** The connections holding the entry (more than one during a make-before-break rotation). */
  connectionIds: string[];
  /** When each holder connected (API Gateway's `connectedAt`), where it was recorded. */
  holderSince?: Record<string, EpochMillis>;
  /**
   * The heartbeat each holder was told and is held to (lib/domain/holder-heartbeat.ts), where
   * it was recorded: absent for holders a registrar before 0.3 let in.
   */
  holderBeats?: Record<string, HolderBeat>;
  /** The newest connect's connection. */
  newestConnectionId?: string;
}

/** The entry's `Healthy` condition, as health reports maintain it. */
export interface HealthState {
  status: 'True' | 'False';
  /** `Draining`: the agent said its VM is shutting down (the `drain` message). */
  reason?: string;
  message?: string;
  lastProbeTime: EpochMillis;
  lastTransitionTime: EpochMillis;
}

/**
 * One WorkloadEntry as the registry stores it: the Istio object as created (hand-made, or
 * built from the group when the VM first connected), plus the state that changes later.
 */
export interface EntryRecord {
  /** The object without system annotations and without the `Healthy` condition. */
  entry: WorkloadEntry;
  /** Name of the WorkloadGroup that auto-registered it; absent for hand-made entries. */
  autoRegistrationGroup?: string;
  connection?: ConnectionState;
  health?: HealthState;
  /** Whether the group had a probe when the entry was built (`health-checks-enabled`). */
  healthChecksEnabled?: boolean;
  /** The caller of the newest connect, from the authorizer. */
  identity?: VerifiedIdentity;
  /**
   * The agent version of the newest connect, as the agent said it (`0.1.x`: it sent none).
   * Absent on entries last connected through a registrar before 0.2.
   */
  agentVersion?: string;
  /** `metadata.generation` of the group the entry was built from (or rolled out to). */
  groupGeneration?: number;
  /**
   * What the agent gave (labels, locality), so a template rollout lets them win again. Absent
   * on entries of releases before rollouts until their next connect records it.
   */
  agentGiven?: AgentGiven;
  /** The EC2 instance the newest connect came from, from a trusted source (see instanceIdOf). */
  instanceId?: string;
  /** Bumped by every write; the sweeper's delete is conditional on the revision it read. */
  revision: number;
  /**
   * The latest claim of this entry's address that was refused while the entry held it (an
   * address is unique within a network): when, and by which entry's connect.
   */
  addressConflict?: AddressConflict;
  /** Out of traffic by an operator's word (see CordonState). */
  cordon?: CordonState;
  /** When the last uncordon put it back (the `Healthy` transition time it shows then). */
  uncordonedAt?: EpochMillis;
  /** The events stored with the entry, oldest first (lib/domain/entry-events.ts). */
  events?: EntryEvent[];
  /**
   * Since when this entry's events are recorded: absent on entries no release with event
   * history has written yet. What happened before is derived from the state (entry-history.ts).
   */
  eventsSince?: EpochMillis;
}

/**
 * An operator took the entry out of traffic (`registrar cordon`): `Healthy` shows False with
 * reason Maintenance and the operator's message, whatever the agent reports, until uncordon.
 * Kept apart from the agent's health so that neither overwrites the other: a health report
 * never puts a cordoned entry back, and uncordon shows the probe's latest verdict at once.
 */
export interface CordonState {
  at: EpochMillis;
  message: string;
}

/** The `Healthy` condition's reason while an operator keeps the entry out of traffic. */
export const MAINTENANCE_REASON = 'Maintenance';

/** The longest operator's message: it becomes the Healthy condition's, as a probe's may be. */
export const MAX_CORDON_MESSAGE = 1024;

export interface AddressConflict {
  at: EpochMillis;
  /** The entry the refused connect would have registered (`<namespace>/<name>`). */
  claimant: string;
}

export function isAutoRegistered(record: EntryRecord): boolean {
  return record.autoRegistrationGroup !== undefined;
}

export function isConnected(record: EntryRecord): boolean {
  return record.connection?.connectedAt !== undefined;
}

/**
 * Renders the Istio WorkloadEntry with its system annotations and `Healthy` condition, so that
 * istiod's own rule routes to it exactly when the registrar would (`servingState().ready`):
 * istiod sends traffic to an entry unless `proxy.istio.io/health-checks-enabled` parses as true
 * and its `Healthy` condition is not `True` (a missing condition counts as not healthy). So the
 * annotation is written whenever the rendered `Healthy` is `False` (disconnected, cordoned,
 * draining, a probe's failure, whether or not the group has a probe) and whenever the group has
 * a probe (no report yet means not ready, as in Istio). A connected entry of a group without a
 * probe carries neither: it is routable as any static WorkloadEntry is.
 */
export function renderWorkloadEntry(record: EntryRecord): WorkloadEntry {
  const { entry } = record;
  const annotations = { ...(entry.metadata.annotations ?? {}) };
  if (record.autoRegistrationGroup !== undefined) {
    annotations[ANNOTATIONS.autoRegistrationGroup] = record.autoRegistrationGroup;
  }
  const connection = record.connection;
  if (connection) {
    annotations[ANNOTATIONS.workloadController] = connection.controller;
    if (connection.connectedAt !== undefined) {
      annotations[ANNOTATIONS.connectedAt] = toRfc3339(connection.connectedAt);
    }
    if (connection.disconnectedAt !== undefined) {
      annotations[ANNOTATIONS.disconnectedAt] = toRfc3339(connection.disconnectedAt);
    }
  }
  const conditions = renderConditions(entry.status?.conditions ?? [], meshHealth(record));
  const healthy = conditions.find((condition) => condition.type === HEALTHY_CONDITION);
  if (record.healthChecksEnabled || healthy?.status === 'False') {
    annotations[ANNOTATIONS.healthChecksEnabled] = 'true';
  }
  const metadata = { ...entry.metadata };
  if (metadata.uid === undefined) {
    metadata.uid = derivedEntryUid(
      metadata.namespace,
      metadata.name,
      metadata.creationTimestamp ?? '',
    );
  }
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  else delete metadata.annotations;
  const rendered: WorkloadEntry = {
    apiVersion: entry.apiVersion || ISTIO_API_VERSION,
    kind: 'WorkloadEntry',
    metadata,
    spec: entry.spec,
  };
  if (conditions.length > 0) rendered.status = { conditions };
  return rendered;
}

/** The `Healthy` condition's reason while no connection holds an auto-registered entry. */
export const DISCONNECTED_REASON = 'Disconnected';

/**
 * The `Healthy` condition the mesh is shown: an operator's cordon first, then, for an
 * auto-registered entry that no connection holds, `False` with reason `Disconnected` (kept
 * registered for the grace period, but never routable: a crashed VM is out of traffic the
 * moment its last holder goes, not 5 minutes later), else the agent's own health.
 *
 * Derived from registry times only, never "now": two projectors, or one that runs twice,
 * render the same condition. The transition time is when the entry stopped being healthy:
 * the disconnect, or the probe's earlier failure when it was already unhealthy.
 */
export function meshHealth(record: EntryRecord): HealthState | undefined {
  const health = effectiveHealth(record);
  if (record.cordon || !isAutoRegistered(record) || isConnected(record)) return health;
  // An entry that never recorded its disconnect (written before disconnectedAt existed) counts
  // from its last probe, else its creation: a fixed time, so the rendering stays stable.
  const disconnectedAt =
    record.connection?.disconnectedAt ??
    health?.lastProbeTime ??
    (Date.parse(record.entry.metadata.creationTimestamp ?? '') || 0);
  const alreadyFalse = health?.status === 'False' && health.lastTransitionTime <= disconnectedAt;
  return {
    status: 'False',
    reason: DISCONNECTED_REASON,
    message: `no connection holds this entry since ${toRfc3339(disconnectedAt)}; kept for the grace period, routable again when its VM reconnects`,
    lastProbeTime: Math.max(health?.lastProbeTime ?? disconnectedAt, disconnectedAt),
    lastTransitionTime: alreadyFalse ? health.lastTransitionTime : disconnectedAt,
  };
}

/**
 * The `Healthy` state the mesh sees: the agent's, unless an operator cordoned the entry
 * (False, Maintenance, the operator's message). After an uncordon the status the probe
 * reports counts from the uncordon when it is newer than the probe's own transition.
 */
export function effectiveHealth(record: EntryRecord): HealthState | undefined {
  const { health, cordon } = record;
  if (cordon) {
    const alreadyFalse = health?.status === 'False' && health.lastTransitionTime <= cordon.at;
    return {
      status: 'False',
      reason: MAINTENANCE_REASON,
      message: cordon.message,
      lastProbeTime: health?.lastProbeTime ?? cordon.at,
      lastTransitionTime: alreadyFalse ? health.lastTransitionTime : cordon.at,
    };
  }
  const back = record.uncordonedAt;
  if (
    health &&
    back !== undefined &&
    health.status === 'True' &&
    back > health.lastTransitionTime
  ) {
    return { ...health, lastTransitionTime: back };
  }
  return health;
}

function renderConditions(others: Condition[], health: HealthState | undefined): Condition[] {
  if (!health) return others;
  const healthy: Condition = {
    type: HEALTHY_CONDITION,
    status: health.status,
    lastProbeTime: toRfc3339(health.lastProbeTime),
    lastTransitionTime: toRfc3339(health.lastTransitionTime),
  };
  if (health.reason !== undefined) healthy.reason = health.reason;
  if (health.message !== undefined) healthy.message = health.message;
  // A stored Healthy condition (hand-made entries, or an older record) keeps its position.
  const at = others.findIndex((condition) => condition.type === HEALTHY_CONDITION);
  if (at === -1) return [...others, healthy];
  return others.map((condition, index) => (index === at ? healthy : condition));
}
