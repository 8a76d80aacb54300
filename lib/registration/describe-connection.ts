import { renderWorkloadEntry } from '../domain/entry-record.ts';
import { NotFoundError } from '../domain/errors.ts';
import type { Probe, WorkloadEntry } from '../domain/model.ts';
import { formatRef } from '../domain/model.ts';
import type { RegistryStore } from '../store/registry-store.ts';
import type { GroupReader } from './group-cache.ts';

export interface ConnectionDescription {
  /** The entry as Istio would show it, system annotations and `Healthy` included. */
  entry: WorkloadEntry;
  /** The probe of the entry's group: the agent learns what to run from it. */
  probe: Probe | undefined;
}

/** `describe`: the entry this connection registered and its group's probe. */
export async function describeConnection(
  deps: { store: Pick<RegistryStore, 'getConnection' | 'getEntry'>; groups: GroupReader },
  connectionId: string,
): Promise<ConnectionDescription> {
  const connection = await deps.store.getConnection(connectionId);
  if (!connection) {
    throw new NotFoundError('this connection registered no WorkloadEntry; reconnect to register');
  }
  const record = await deps.store.getEntry(connection.entry);
  // The sweeper or an operator deleted the entry while the connection stayed open.
  if (!record) {
    throw new NotFoundError(
      `WorkloadEntry ${formatRef(connection.entry)} no longer exists; reconnect to register again`,
    );
  }
  const groupName = record.autoRegistrationGroup;
  const group = groupName
    ? await deps.groups.getGroup({ namespace: connection.entry.namespace, name: groupName })
    : undefined;
  return { entry: renderWorkloadEntry(record), probe: group?.group.spec.probe };
}
