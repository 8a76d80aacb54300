import type { ObjectRef } from '../domain/model.ts';
import type { HolderRef } from '../domain/registry-records.ts';
import type { ConnectionRecordStore } from './entry-lifecycle-store.ts';

/** What finding a connection's entry reads: its connection record, when the context has none. */
export type HolderLookupStore = Pick<ConnectionRecordStore, 'getConnection'>;

/**
 * The entry a connection registered. In token mode the authorizer put it into the context,
 * which API Gateway hands to every later event of the connection (`$disconnect` included): no
 * read. Without it (IAM mode has no Lambda authorizer) the connection record says.
 */
export async function holderOf(
  store: HolderLookupStore,
  connectionId: string,
  carried: ObjectRef | undefined,
): Promise<HolderRef | undefined> {
  if (carried) return { connectionId, entry: carried };
  const record = await store.getConnection(connectionId);
  return record ? { connectionId, entry: record.entry } : undefined;
}
