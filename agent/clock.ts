/**
 * Time and randomness, injected so that backoff, rotation, keepalive and probe schedules can
 * be tested without waiting: tests pass a manual clock, the program passes `systemClock`.
 */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Runs `fn` once after `ms`; the returned timer cancels it. */
  setTimer(ms: number, fn: () => void): Timer;
  /** Uniform in [0, 1): the source of jitter. */
  random(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    // Node fires a timer up to 1 ms early; a wait the agent promises (the drain delay) must
    // not end before it is due, so an early call waits out the rest (on the monotonic clock).
    const due = performance.now() + Math.max(0, ms);
    let handle: NodeJS.Timeout;
    const arm = (wait: number) => {
      // Not unref'd: while the agent waits to reconnect no socket is open, and the timer is
      // what keeps the process alive until the next attempt.
      handle = setTimeout(() => {
        const left = due - performance.now();
        if (left > 0) arm(left);
        else fn();
      }, wait);
    };
    arm(Math.max(0, ms));
    return { cancel: () => clearTimeout(handle) };
  },
  random: () => Math.random(),
};

/** Resolves after `ms` on `clock`; rejects nothing, so callers check their own state after. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => {
    clock.setTimer(ms, resolve);
  });
}
