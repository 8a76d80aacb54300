import { NotRegisteredError } from '../domain/errors.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type { EntryLifecycleStore } from './entry-lifecycle-store.ts';
import { type HolderLookupStore, holderOf } from './holder.ts';

/** What a health report reads and writes: the connection's entry, and its `Healthy` condition. */
export type ReportHealthStore = HolderLookupStore & Pick<EntryLifecycleStore, 'reportHealth'>;

export interface HealthInput {
  connectionId: string;
  carried: ObjectRef | undefined;
  healthy: boolean;
  message?: string;
  /** When the report was received. */
  at: EpochMillis;
}

export interface ReportHealthResult {
  /** 'superseded': a newer report of the same VM landed first; the agent's report counts. */
  outcome: 'transitioned' | 'refreshed' | 'superseded';
  entry: ObjectRef;
}

/**
 * Sets the entry's `Healthy` condition from an agent's report. Any connection that holds the
 * entry reports for it (after a rotation, the surviving connection's reports count); a report
 * older than the stored `lastProbeTime` changes nothing but still counts as delivered. A
 * connection that holds nothing gets NotRegistered: the report did not land, and the agent
 * must reconnect to register again.
 */
export async function reportHealth(
  store: ReportHealthStore,
  input: HealthInput,
): Promise<ReportHealthResult> {
  const holder = await holderOf(store, input.connectionId, input.carried);
  if (!holder) throw new NotRegisteredError();
  const report = { ...holder, healthy: input.healthy, at: input.at };
  // The condition carries a message only while unhealthy: a stale failure reason on a
  // healthy entry would mislead whoever reads it.
  const outcome = await store.reportHealth(
    !input.healthy && input.message !== undefined ? { ...report, message: input.message } : report,
  );
  if (outcome === 'not-holder') throw new NotRegisteredError();
  return { outcome, entry: holder.entry };
}
