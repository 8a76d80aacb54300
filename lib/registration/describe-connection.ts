import { renderWorkloadEntry } from '../domain/entry-record.ts';
import { NotRegisteredError } from '../domain/errors.ts';
import { type Heartbeat, heartbeatOf } from '../domain/heartbeat.ts';
import type { ObjectRef, Probe, WorkloadEntry } from '../domain/model.ts';
import { formatRef } from '../domain/model.ts';
import { type MaintenanceNotice, maintenanceOf } from '../protocol/maintenance-notice.ts';
import type { EntryLifecycleStore } from './entry-lifecycle-store.ts';
import { type HolderLookupStore, holderOf } from './holder.ts';

/** What describing a connection reads: its entry and the entry's group. */
export type DescribeConnectionStore = HolderLookupStore &
  Pick<EntryLifecycleStore, 'getEntry' | 'getGroup'>;

export interface ConnectionDescription {
  /** The entry as Istio would show it, system annotations and `Healthy` included. */
  entry: WorkloadEntry;
  /** The probe of the entry's group: the agent learns what to run from it. */
  probe: Probe | undefined;
  /** How often the agent pings: its group's heartbeat, or the default (domain/heartbeat.ts). */
  heartbeat: Heartbeat;
  /** The operator's cordon (or last uncordon): told again on every registration. */
  maintenance?: MaintenanceNotice;
}

/**
 * `describe`: the entry this connection holds and its group's probe. A connection that holds
 * nothing (its entry was swept or deleted, or its registration did not land) is told so with
 * NotRegistered, and the agent reconnects.
 */
export async function describeConnection(
  store: DescribeConnectionStore,
  connectionId: string,
  carried: ObjectRef | undefined,
): Promise<ConnectionDescription> {
  const holder = await holderOf(store, connectionId, carried);
  if (!holder) throw new NotRegisteredError();
  const record = await store.getEntry(holder.entry);
  if (!record?.connection?.connectionIds.includes(connectionId)) {
    throw new NotRegisteredError(
      `this connection holds no WorkloadEntry (${formatRef(holder.entry)} ${record ? 'is held by other connections' : 'does not exist'}); reconnect to register`,
    );
  }
  const groupName = record.autoRegistrationGroup;
  const group = groupName
    ? await store.getGroup({ namespace: holder.entry.namespace, name: groupName })
    : undefined;
  const maintenance = maintenanceOf(record);
  // The heartbeat this holder was told at its connect (or acknowledged since) and is held to;
  // the group's now only for a holder a registrar before 0.3 let in, which recorded none.
  const told = record.connection.holderBeats?.[connectionId]?.told;
  return {
    entry: renderWorkloadEntry(record),
    probe: group?.group.spec.probe,
    heartbeat: told ? { ...told } : heartbeatOf(group?.group),
    ...(maintenance ? { maintenance } : {}),
  };
}
