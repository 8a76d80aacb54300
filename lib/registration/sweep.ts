import type { EntryRecord } from '../domain/entry-record.ts';
import type { EpochMillis } from '../domain/model.ts';
import {
  isDueForSweep,
  type SweepPolicy,
  sweepCutoffs,
  sweepReason,
} from '../domain/sweep-policy.ts';
import type { RegistryStore } from '../store/registry-store.ts';

export interface SweepOptions {
  now: EpochMillis;
  policy: SweepPolicy;
  /** Most deletions one run attempts; the next run (a minute later) continues. */
  maxDeletes: number;
  /** Deletions per second, so a mass expiry does not flood the mesh with endpoint removals. */
  deletesPerSecond: number;
  /** Report what would be deleted, delete nothing (`registrar sweep --dry-run`). */
  dryRun?: boolean;
  /** Injected so tests pace deletions without waiting; real timers by default. */
  sleep?: (ms: number) => Promise<void>;
}

export interface SweptEntry {
  namespace: string;
  name: string;
  reason: 'disconnected' | 'stale';
}

export interface SweepResult {
  /** Deleted (or, in a dry run, due and would be deleted). */
  deleted: SweptEntry[];
  /** Deletes that lost to a write landing after the read (a reconnect): the entry stays. */
  conflicts: number;
  candidatesRead: number;
  dryRun: boolean;
}

/** What the sweep needs from storage; any RegistryStore will do. */
export type SweepStore = Pick<RegistryStore, 'sweepCandidates' | 'deleteSwept'>;

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Deletes auto-registered entries that stayed disconnected past the grace period, or still look
 * connected long after API Gateway must have closed them (a `$disconnect` that never arrived).
 * Reads only candidates from the sweep index and re-checks each with the pure policy, so the
 * index only narrows the search and never decides; hand-made entries are never touched.
 */
export async function runSweep(store: SweepStore, options: SweepOptions): Promise<SweepResult> {
  const sleep = options.sleep ?? realSleep;
  const dryRun = options.dryRun ?? false;
  // Spacing deletions evenly: 1000 ms / 50 per second = one every 20 ms.
  const intervalMs = 1000 / options.deletesPerSecond;
  const result: SweepResult = { deleted: [], conflicts: 0, candidatesRead: 0, dryRun };
  let attempts = 0;
  const candidates = store.sweepCandidates(
    sweepCutoffs(options.now, options.policy),
    options.maxDeletes,
  );
  for await (const record of candidates) {
    result.candidatesRead += 1;
    if (!isDueForSweep(record, options.now, options.policy)) continue;
    if (dryRun) {
      result.deleted.push(swept(record));
    } else {
      if (attempts > 0) await sleep(intervalMs);
      if ((await store.deleteSwept(record)) === 'deleted') result.deleted.push(swept(record));
      else result.conflicts += 1;
    }
    attempts += 1;
    if (attempts >= options.maxDeletes) break;
  }
  return result;
}

function swept(record: EntryRecord): SweptEntry {
  const { namespace, name } = record.entry.metadata;
  return { namespace, name, reason: sweepReason(record) };
}
