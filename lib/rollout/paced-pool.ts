import type { EpochMillis } from '../domain/model.ts';

export interface PacedPoolOptions {
  /** Calls in flight at once. */
  concurrency: number;
  /** Calls started per second, at most, over the whole run (all pages, all groups). */
  perSecond: number;
  now(): EpochMillis;
  sleep(ms: number): Promise<void>;
}

/**
 * A bounded, rate-limited pool, shared by everything one rollout run writes: at most
 * `concurrency` writes in flight and at most `perSecond` started per second. Why not p-limit:
 * the ceiling that matters is the rate (a namespace's entries share one partition key, which
 * takes 1,000 writes/s; the rollout keeps well under it so connects and health reports of the
 * same namespace are never throttled), and a rate needs the clock the tests control.
 */
export class PacedPool {
  readonly #options: PacedPoolOptions;
  /** When the next call may start. */
  #nextSlot = 0;

  constructor(options: PacedPoolOptions) {
    if (!(options.perSecond > 0) || !(options.concurrency >= 1)) {
      throw new RangeError('a paced pool needs a positive rate and concurrency');
    }
    this.#options = options;
  }

  /** Runs `work` over `items`; results in the items' order. A call that throws rejects all. */
  async map<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
    const results: R[] = new Array(items.length);
    let next = 0;
    const lane = async () => {
      for (let at = next++; at < items.length; at = next++) {
        await this.#slot();
        results[at] = await work(items[at] as T);
      }
    };
    const lanes = Math.min(this.#options.concurrency, items.length);
    await Promise.all(Array.from({ length: lanes }, lane));
    return results;
  }

  /** Takes the next start time; waits for it when it lies ahead. */
  async #slot(): Promise<void> {
    const now = this.#options.now();
    const at = Math.max(now, this.#nextSlot);
    this.#nextSlot = at + 1000 / this.#options.perSecond;
    if (at > now) await this.#options.sleep(at - now);
  }
}
