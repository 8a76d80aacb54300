import { failureDelay } from '../agent/backoff.ts';
import { type AgentTiming, DEFAULT_TIMING } from '../agent/settings.ts';
import { seededRandom } from '../test/fixtures/fault-proxy.ts';

/**
 * A reconnect storm on a simulated clock: `vms` agents lose their connections at the same
 * moment (a regional API Gateway event) and reconnect with the agent's own backoff
 * (agent/backoff.ts, failureDelay: full jitter, doubling from 1 s to the 60 s cap). API Gateway
 * admits `admitPerSecond` new connections in each second (500 per account and region by
 * default) and answers the others 429, which the agent treats as a failure and backs off from.
 * Every attempt is an event in time order; nothing runs in real time.
 */
export interface StormOptions {
  vms: number;
  admitPerSecond?: number;
  timing?: AgentTiming;
  /** Deterministic jitter: a seed for the generator. */
  seed?: number;
}

export interface StormResult {
  vms: number;
  /** When the last VM was connected again, seconds after the loss. */
  allBackSeconds: number;
  /** The bound stated in docs/deploy.md: vms / admitted per second + the backoff cap. */
  boundSeconds: number;
  attempts: number;
  maxAttemptsPerSecond: number;
  maxAdmittedPerSecond: number;
  /** VMs back within each minute, cumulative, for the curve. */
  backByMinute: number[];
}

export function simulateReconnectStorm(options: StormOptions): StormResult {
  const admitPerSecond = options.admitPerSecond ?? 500;
  const timing = options.timing ?? DEFAULT_TIMING;
  const random = seededRandom(options.seed ?? 1);
  const queue = new MinHeap();
  for (let vm = 0; vm < options.vms; vm++) queue.push(failureDelay(1, timing, random()), 1);
  const attemptsInSecond = new Map<number, number>();
  const admittedInSecond = new Map<number, number>();
  let attempts = 0;
  let last = 0;
  const backAt: number[] = [];
  for (let next = queue.pop(); next; next = queue.pop()) {
    const [at, failures] = next;
    const second = Math.floor(at / 1000);
    attempts += 1;
    attemptsInSecond.set(second, (attemptsInSecond.get(second) ?? 0) + 1);
    const admitted = admittedInSecond.get(second) ?? 0;
    if (admitted < admitPerSecond) {
      admittedInSecond.set(second, admitted + 1);
      backAt.push(at);
      last = Math.max(last, at);
    } else {
      queue.push(at + failureDelay(failures + 1, timing, random()), failures + 1);
    }
  }
  const minutes = Math.ceil(last / 60_000) || 1;
  const backByMinute = Array.from(
    { length: minutes },
    (_, m) => backAt.filter((at) => at < (m + 1) * 60_000).length,
  );
  return {
    vms: options.vms,
    allBackSeconds: last / 1000,
    boundSeconds: options.vms / admitPerSecond + timing.backoffCapMs / 1000,
    attempts,
    maxAttemptsPerSecond: Math.max(0, ...attemptsInSecond.values()),
    maxAdmittedPerSecond: Math.max(0, ...admittedInSecond.values()),
    backByMinute,
  };
}

/** Attempts by time: [at ms, failures so far]. */
class MinHeap {
  readonly #items: [number, number][] = [];

  push(at: number, failures: number): void {
    const items = this.#items;
    items.push([at, failures]);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((items[parent] as [number, number])[0] <= at) break;
      [items[parent], items[i]] = [items[i] as [number, number], items[parent] as [number, number]];
      i = parent;
    }
  }

  pop(): [number, number] | undefined {
    const items = this.#items;
    const top = items[0];
    const tail = items.pop();
    if (items.length > 0 && tail) {
      items[0] = tail;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (
          left < items.length &&
          (items[left] as [number, number])[0] < (items[smallest] as [number, number])[0]
        )
          smallest = left;
        if (
          right < items.length &&
          (items[right] as [number, number])[0] < (items[smallest] as [number, number])[0]
        )
          smallest = right;
        if (smallest === i) break;
        [items[smallest], items[i]] = [
          items[i] as [number, number],
          items[smallest] as [number, number],
        ];
        i = smallest;
      }
    }
    return top;
  }
}
