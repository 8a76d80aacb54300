import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  REFUSALS_FILE,
  type RefusalTallyFile,
} from '../../lib/dashboard-server/refusal-tally-file.ts';
import { onRefusal } from '../../lib/observability.ts';

/**
 * The local runtime's count of refused requests by reason, per minute over the last hour: what
 * the `Refused` metric (by `Reason`) tells on AWS, for `registrar dashboard`. Kept in memory and
 * written beside `local.json` every few seconds when it changed, never per refusal: a refusal
 * writes nothing to the registry, and a flood of them costs one small file write per period.
 */

export const REFUSAL_BUCKET_MS = 60_000;
/** Minutes kept: the dashboard shows the last hour. */
export const REFUSAL_BUCKETS = 60;

export class RefusalTally {
  readonly #startedAt: number;
  readonly #buckets = new Map<number, Record<string, number>>();
  #changes = 0;

  constructor(startedAt: number) {
    this.#startedAt = startedAt;
  }

  add(reason: string, at: number): void {
    const bucket = Math.floor(at / REFUSAL_BUCKET_MS) * REFUSAL_BUCKET_MS;
    const counts = this.#buckets.get(bucket) ?? {};
    counts[reason] = (counts[reason] ?? 0) + 1;
    this.#buckets.set(bucket, counts);
    this.#changes++;
    const oldest = bucket - (REFUSAL_BUCKETS - 1) * REFUSAL_BUCKET_MS;
    for (const key of this.#buckets.keys()) if (key < oldest) this.#buckets.delete(key);
  }

  /** Bumped by every refusal: the writer skips a period in which nothing changed. */
  get changes(): number {
    return this.#changes;
  }

  snapshot(): RefusalTallyFile {
    return {
      startedAt: this.#startedAt,
      bucketMs: REFUSAL_BUCKET_MS,
      buckets: [...this.#buckets.entries()].sort(([a], [b]) => a - b),
    };
  }
}

/**
 * Counts this process's refusals into `<dir>/refusals.json`, rewritten (aside, then renamed:
 * a reader never sees half a file) at most every `periodMs`. Returns the stop, which removes
 * the file: a stopped runtime's counts must not pass for a running one's.
 */
export async function startRefusalTally(
  dir: string,
  now: () => number,
  periodMs = 5_000,
): Promise<() => Promise<void>> {
  const tally = new RefusalTally(now());
  const path = join(dir, REFUSALS_FILE);
  let written = -1;
  const write = async () => {
    if (tally.changes === written) return;
    written = tally.changes;
    const draft = `${path}.${process.pid}.tmp`;
    await writeFile(draft, `${JSON.stringify(tally.snapshot())}\n`);
    await rename(draft, path);
  };
  await write();
  const stopListening = onRefusal((reason) => tally.add(reason, now()));
  let writing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    writing = writing.then(write).catch(() => undefined);
  }, periodMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    stopListening();
    await writing;
    await rm(path, { force: true });
  };
}
