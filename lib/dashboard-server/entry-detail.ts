import type { EntryRecord } from '../domain/entry-record.ts';
import { HEALTHY_CONDITION } from '../domain/model.ts';
import { eventsOf } from '../presentation/entry-events.ts';
import { formatAge, toYaml } from '../presentation/output.ts';
import { connectedStatus, renderEntry } from '../presentation/resource-items.ts';
import type { EntryResponse, HolderView } from './api-types.ts';

/**
 * One VM's page: its WorkloadEntry as `registrar get we NAME -o yaml` prints it, the
 * connections holding it and their ages, its Healthy condition, and its events as
 * `registrar describe we` shows them (lib/presentation/entry-events.ts: the entry's event history, one
 * source for both views).
 */
export function entryDetail(record: EntryRecord, readAt: number, now: number): EntryResponse {
  const entry = renderEntry(record);
  const condition = entry.status?.conditions?.find((c) => c.type === HEALTHY_CONDITION);
  const connection = record.connection;
  const holders: HolderView[] = (connection?.connectionIds ?? []).map((id) => {
    const since = connection?.holderSince?.[id];
    return {
      connectionId: id,
      since: since ?? null,
      age: since === undefined ? '<unknown>' : formatAge(since, now),
      newest: connection?.newestConnectionId === id,
    };
  });
  holders.sort((a, b) => (b.since ?? 0) - (a.since ?? 0));
  return {
    namespace: entry.metadata.namespace,
    name: entry.metadata.name,
    yaml: toYaml(entry),
    connected: connectedStatus(record),
    group: record.autoRegistrationGroup ?? null,
    identity: record.identity?.principal ?? null,
    holders,
    healthy: condition
      ? {
          status: condition.status,
          reason: condition.reason ?? null,
          message: condition.message ?? null,
          lastProbeTime: condition.lastProbeTime ?? null,
          lastTransitionTime: condition.lastTransitionTime ?? null,
        }
      : null,
    // Oldest first, as `describe` and kubectl list them.
    events: eventsOf(record, now).map((event) => ({ ...event, age: formatAge(event.at, now) })),
    readAt,
  };
}
