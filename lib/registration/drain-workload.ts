import { NotRegisteredError } from '../domain/errors.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { EntryLifecycleStore } from './entry-lifecycle-store.ts';
import { type HolderLookupStore, holderOf } from './holder.ts';

/** What a drain reads and writes: the connection's entry, and its `Draining` condition. */
export type DrainStore = HolderLookupStore & Pick<EntryLifecycleStore, 'drain'>;

export interface DrainInput {
  connectionId: string;
  carried: ObjectRef | undefined;
  /** When the drain was received. */
  at: EpochMillis;
}

/**
 * The agent's VM is shutting down: the entry turns `Healthy: False` with reason `Draining`,
 * so the mesh stops sending new requests while the agent waits out the propagation delay and
 * then closes cleanly (1000: a deliberate departure, removed after the grace period, never
 * held). Idempotent: a repeated drain changes nothing the mesh sees. A new connect of the VM
 * (it came back) cancels it; health reports from the draining connection are ignored.
 * A connection that holds nothing gets NotRegistered, as for a health report.
 */
export async function drainWorkload(
  store: DrainStore,
  input: DrainInput,
): Promise<{ entry: ObjectRef }> {
  const holder = await holderOf(store, input.connectionId, input.carried);
  if (!holder) throw new NotRegisteredError();
  if ((await store.drain(holder, input.at)) === 'not-holder') throw new NotRegisteredError();
  return { entry: holder.entry };
}
