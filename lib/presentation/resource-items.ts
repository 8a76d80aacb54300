import {
  DISCONNECTED_REASON,
  type EntryRecord,
  isAutoRegistered,
  isConnected,
  MAINTENANCE_REASON,
  renderWorkloadEntry,
} from '../domain/entry-record.ts';
import { HEALTHY_CONDITION, type WorkloadEntry, type WorkloadGroup } from '../domain/model.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import { isOnCurrentTemplate } from '../domain/template-rollout.ts';
import { servingState } from '../projection/serving.ts';
import { formatAge, parseTimestamp } from './output.ts';

/**
 * What `registrar get` prints of a WorkloadGroup or WorkloadEntry, in every output format, and
 * what the dashboard's entry list shows: one definition of a row for both.
 */

/** The two resource types. */
export type ResourceKind = 'WorkloadGroup' | 'WorkloadEntry';

/** The group as Istio shows it, with the generation the registry keeps. */
export function renderGroup(stored: StoredGroup): WorkloadGroup {
  const { group } = stored;
  return { ...group, metadata: { ...group.metadata, generation: stored.generation } };
}

/**
 * The entry as Istio shows it. `renderWorkloadEntry` always sets `annotations`; an empty map
 * is left out, as the API server does, so hand-made entries print as they were applied.
 */
export function renderEntry(record: EntryRecord): WorkloadEntry {
  const entry = renderWorkloadEntry(record);
  if (Object.keys(entry.metadata.annotations ?? {}).length > 0) return entry;
  const { annotations: _empty, ...metadata } = entry.metadata;
  return { ...entry, metadata };
}

/** Reasons the registrar itself sets on `Healthy`, shown beside the status in HEALTHY. */
const REGISTRAR_REASONS = new Set([MAINTENANCE_REASON, DISCONNECTED_REASON]);

/**
 * The `Healthy` condition as istiod reads it: `True`, `False`, `False (Maintenance)` while an
 * operator keeps it out of traffic, `False (Disconnected)` while no connection holds it.
 */
export function healthyStatus(entry: WorkloadEntry): string {
  const condition = entry.status?.conditions?.find((c) => c.type === HEALTHY_CONDITION);
  if (condition?.reason !== undefined && REGISTRAR_REASONS.has(condition.reason))
    return `${condition.status} (${condition.reason})`;
  return condition?.status ?? '<none>';
}

/** Whether the mesh sends the entry traffic (istiod's rule over the rendered entry). */
export function routableStatus(record: EntryRecord): string {
  return servingState(record).ready ? 'True' : 'False';
}

/** `True`/`False` for auto-registered entries; hand-made ones have no connection to show. */
export function connectedStatus(record: EntryRecord): string {
  if (!isAutoRegistered(record)) return '<none>';
  return isConnected(record) ? 'True' : 'False';
}

export function ageOf(meta: { creationTimestamp?: string }, now: number): string {
  return formatAge(parseTimestamp(meta.creationTimestamp), now);
}

/** What `get` prints of one object, in every output format. */
export interface ResourceItem {
  kind: ResourceKind;
  namespace: string;
  name: string;
  /** The object as `-o json|yaml|jsonpath` print it (Istio's shape). */
  object: WorkloadGroup | WorkloadEntry;
  /** The table's cells (`COLUMNS[kind].table`), then the ones `-o wide` adds. */
  cells(now: number): { table: string[]; wide: string[] };
  /** Equal for two reads of an unchanged object: `--watch` prints a row when it changes. */
  fingerprint: string;
}

/** `get` columns by kind; `-o wide` appends the `wide` ones, as kubectl does. */
export const COLUMNS: Record<ResourceKind, { table: string[]; wide: string[] }> = {
  WorkloadEntry: {
    table: ['NAME', 'ADDRESS', 'CONNECTED', 'HEALTHY', 'ROUTABLE', 'GROUP', 'AGE'],
    wide: ['NETWORK', 'LOCALITY', 'IDENTITY', 'AGENT'],
  },
  WorkloadGroup: {
    table: ['NAME', 'GENERATION', 'ENTRIES', 'UP-TO-DATE', 'AGE'],
    wide: ['SERVICE-ACCOUNT', 'NETWORK', 'PROBE'],
  },
};

/**
 * One entry: NAME ADDRESS CONNECTED HEALTHY ROUTABLE GROUP AGE, wide: NETWORK LOCALITY
 * IDENTITY AGENT. ROUTABLE is the one an operator asks first: whether the mesh sends it traffic.
 */
export function entryItem(record: EntryRecord): ResourceItem {
  const entry = renderEntry(record);
  const { metadata, spec } = entry;
  return {
    kind: 'WorkloadEntry',
    namespace: metadata.namespace,
    name: metadata.name,
    object: entry,
    cells: (now) => ({
      table: [
        metadata.name,
        spec.address ?? '<none>',
        connectedStatus(record),
        healthyStatus(entry),
        routableStatus(record),
        record.autoRegistrationGroup ?? '<none>',
        ageOf(metadata, now),
      ],
      wide: [
        spec.network || '<none>',
        spec.locality || '<none>',
        record.identity?.principal ?? '<none>',
        agentVersionCell(record),
      ],
    }),
    fingerprint: JSON.stringify([entry, record.identity ?? null, record.agentVersion ?? null]),
  };
}

/**
 * The agent version of the newest connect; `<unknown>` for an entry last connected through a
 * registrar before 0.2 (it recorded none), `<none>` for a hand-made entry (no agent).
 */
export function agentVersionCell(record: EntryRecord): string {
  if (record.agentVersion !== undefined) return record.agentVersion;
  return isAutoRegistered(record) ? '<unknown>' : '<none>';
}

/**
 * One group: NAME GENERATION ENTRIES UP-TO-DATE AGE, wide: SERVICE-ACCOUNT NETWORK PROBE.
 * ENTRIES counts the entries it auto-registered, UP-TO-DATE those on its current template (as
 * a Deployment's UP-TO-DATE): fewer while a rollout runs, or when entries keep a service
 * account or network the template no longer gives (a rollout never changes identity).
 */
export function groupItem(stored: StoredGroup, entries: readonly EntryRecord[] = []): ResourceItem {
  const group = renderGroup(stored);
  const own = entries.filter(
    (record) =>
      record.autoRegistrationGroup === stored.group.metadata.name &&
      record.entry.metadata.namespace === stored.group.metadata.namespace,
  );
  const upToDate = own.filter((record) =>
    isOnCurrentTemplate(record, stored.group, stored.generation),
  ).length;
  const { metadata, spec } = group;
  return {
    kind: 'WorkloadGroup',
    namespace: metadata.namespace,
    name: metadata.name,
    object: group,
    cells: (now) => ({
      table: [
        metadata.name,
        String(metadata.generation ?? ''),
        String(own.length),
        String(upToDate),
        ageOf(metadata, now),
      ],
      wide: [
        spec.template.serviceAccount || '<none>',
        spec.template.network || '<none>',
        probeKind(spec.probe),
      ],
    }),
    fingerprint: JSON.stringify([group, own.length, upToDate]),
  };
}

function probeKind(probe: WorkloadGroup['spec']['probe']): string {
  if (!probe) return '<none>';
  return ['httpGet', 'tcpSocket', 'exec'].find((kind) => kind in probe) ?? '<none>';
}
