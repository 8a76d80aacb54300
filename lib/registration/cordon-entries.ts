import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import {
  cordonNotice,
  type MaintenanceNotice,
  uncordonNotice,
} from '../protocol/maintenance-notice.ts';
import type { CordonStore } from './entry-event-store.ts';

/** Tells an agent something through its connection (`POST @connections/{id}`). */
export interface AgentNotifier {
  post(
    connectionId: string,
    message: MaintenanceNotice,
  ): Promise<'sent' | 'gone' | { failed: string }>;
}

export type MaintenanceOutcome =
  | 'cordoned'
  | 'already-cordoned'
  | 'uncordoned'
  | 'not-cordoned'
  | 'not-found'
  | 'failed';

export interface MaintenanceResult {
  ref: ObjectRef;
  outcome: MaintenanceOutcome;
  /** Why it failed ('failed'). */
  error?: string;
  /** Agents (connections) told now. */
  told: number;
  /** Connections that could not be told, and why ('no management endpoint' when none). */
  untold: { connectionId: string; reason: string }[];
}

export interface MaintenanceRequest {
  /** True: cordon (out of traffic); false: uncordon. */
  cordon: boolean;
  /** The operator's message (cordon). */
  message: string;
  /** Entries started per second: a bulk cordon changes the mesh at a pace it can follow. */
  ratePerSecond: number;
  /** Entries in flight at once (each is a write and a post per holder). */
  concurrency: number;
  now: () => EpochMillis;
  sleep?: (ms: number) => Promise<void>;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Cordons or uncordons entries, paced: the i-th starts no earlier than i / rate seconds after
 * the first, at most `concurrency` at a time. Each is one conditional write (its event in the
 * same write; lib/store/dynamodb-cordon.ts), then the agents holding it are told. A failure of
 * one entry is its result, never the end of the others. `onResult` sees each as it ends.
 */
export async function changeMaintenance(
  store: CordonStore,
  notifier: AgentNotifier | undefined,
  refs: readonly ObjectRef[],
  request: MaintenanceRequest,
  onResult: (result: MaintenanceResult) => void,
): Promise<MaintenanceResult[]> {
  const sleep = request.sleep ?? realSleep;
  const intervalMs = 1000 / request.ratePerSecond;
  const started = request.now();
  const results: MaintenanceResult[] = new Array(refs.length);
  const lanes = new Set<Promise<void>>();
  for (const [index, ref] of refs.entries()) {
    while (lanes.size >= request.concurrency) await Promise.race(lanes);
    const wait = started + index * intervalMs - request.now();
    if (wait > 0) await sleep(wait);
    const lane = changeOne(store, notifier, ref, request)
      .then((result) => {
        results[index] = result;
        onResult(result);
      })
      .finally(() => lanes.delete(lane));
    lanes.add(lane);
  }
  await Promise.all(lanes);
  return results;
}

async function changeOne(
  store: CordonStore,
  notifier: AgentNotifier | undefined,
  ref: ObjectRef,
  request: MaintenanceRequest,
): Promise<MaintenanceResult> {
  const at = request.now();
  try {
    const written = request.cordon
      ? await store.cordon(ref, request.message, at)
      : await store.uncordon(ref, at);
    if (written.outcome === 'not-found') return { ref, outcome: 'not-found', told: 0, untold: [] };
    const changed = written.outcome === 'cordoned' || written.outcome === 'uncordoned';
    const result: MaintenanceResult = { ref, outcome: written.outcome, told: 0, untold: [] };
    // Only a change is told: an entry already in that state was told when it changed.
    if (changed) await tellHolders(notifier, written.record, request, at, result);
    return result;
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    return { ref, outcome: 'failed', error: text, told: 0, untold: [] };
  }
}

/**
 * Posts the notice to every connection holding the entry. A connection that is gone (410) has
 * nothing to tell; one that cannot be reached learns it from `describe` when it reconnects.
 */
async function tellHolders(
  notifier: AgentNotifier | undefined,
  record: EntryRecord,
  request: MaintenanceRequest,
  at: EpochMillis,
  result: MaintenanceResult,
): Promise<void> {
  const holders = record.connection?.connectionIds ?? [];
  const notice = request.cordon ? cordonNotice(at, request.message) : uncordonNotice(at);
  for (const connectionId of holders) {
    if (!notifier) {
      result.untold.push({ connectionId, reason: 'no management endpoint' });
      continue;
    }
    const answer = await notifier.post(connectionId, notice);
    if (answer === 'sent') result.told += 1;
    else if (answer !== 'gone') result.untold.push({ connectionId, reason: answer.failed });
  }
}
