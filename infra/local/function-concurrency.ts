/**
 * How many invocations of each function the local runtime runs at once (`--function-concurrency`).
 *
 * On AWS each invocation has a Lambda instance to itself, and a burst of 1,000 connects runs on
 * hundreds of them. Locally every invocation shares one process and two cores: started all at
 * once, 1,000 connects each hold their requests' objects for the whole burst (the old
 * generation grows to hundreds of MB and its collections take the CPU), and every one of them
 * answers late. A function's concurrency limit, as a Lambda function's reserved concurrency,
 * keeps the burst to a few dozen invocations at a time; the rest wait their turn in the order
 * they arrived (Lambda would refuse them with 429; waiting lets a burst on one machine finish
 * sooner, and docs/benchmarks.md, "Local end to end", has the figures).
 *
 * A wait counts against the caller's deadline, API Gateway's integration timeout: a caller that
 * gives up while waiting is taken out of the line and its invocation never runs, so no
 * `$connect` registers a VM whose upgrade was already refused. A slot is held until the
 * invocation settles, even past that deadline (Lambda keeps running a function API Gateway no
 * longer waits for), and is handed to the next in line when it does, whether the invocation
 * answered or threw.
 */
export class FunctionConcurrency {
  readonly limit: number;
  readonly #functions = new Map<string, { running: number; waiting: Waiter[] }>();

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(
        `function concurrency must be a whole number of at least 1, not ${limit}`,
      );
    }
    this.limit = limit;
  }

  /**
   * Resolves with the slot's release once `functionName` has a free slot; rejects with the
   * signal's reason, and leaves the line, if `signal` aborts first.
   */
  acquire(functionName: string, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    let fn = this.#functions.get(functionName);
    if (!fn) {
      fn = { running: 0, waiting: [] };
      this.#functions.set(functionName, fn);
    }
    const slots = fn;
    const release = onceOnly(() => this.#release(functionName, slots));
    if (slots.running < this.limit) {
      slots.running += 1;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          signal.removeEventListener('abort', leave);
          resolve(release);
        },
      };
      const leave = () => {
        const place = slots.waiting.indexOf(waiter);
        if (place >= 0) slots.waiting.splice(place, 1);
        this.#forgetIfIdle(functionName, slots);
        reject(signal.reason);
      };
      signal.addEventListener('abort', leave, { once: true });
      slots.waiting.push(waiter);
    });
  }

  /** Invocations of `functionName` running now, and waiting for a slot. */
  load(functionName: string): { running: number; waiting: number } {
    const fn = this.#functions.get(functionName);
    return { running: fn?.running ?? 0, waiting: fn?.waiting.length ?? 0 };
  }

  #release(functionName: string, slots: { running: number; waiting: Waiter[] }): void {
    const next = slots.waiting.shift();
    if (next) {
      // The slot passes straight to the next in line: the running count does not change.
      next.start();
      return;
    }
    slots.running -= 1;
    this.#forgetIfIdle(functionName, slots);
  }

  #forgetIfIdle(functionName: string, slots: { running: number; waiting: Waiter[] }): void {
    if (slots.running === 0 && slots.waiting.length === 0) this.#functions.delete(functionName);
  }
}

interface Waiter {
  start(): void;
}

/** A release called twice (a `finally` after a handled error, say) frees one slot, not two. */
function onceOnly(release: () => void): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    release();
  };
}

/** Reads `--function-concurrency`: a whole number of at least 1. */
export function parseFunctionConcurrency(text: string): number {
  const value = Number(text.trim());
  if (!/^\d+$/.test(text.trim()) || value < 1) {
    throw new RangeError(
      'must be a whole number of at least 1 (invocations of each function at once)',
    );
  }
  return value;
}
