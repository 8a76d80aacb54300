/**
 * How many messages one connection may send (DESIGN: fair shares). API Gateway has no limit
 * per connection, and the stage's route throttle is shared by every connection: without this,
 * one agent of one namespace sending messages as fast as the gateway takes them would use the
 * route capacity every other namespace's agents need for their health reports.
 *
 * A live agent sends a handful of messages a minute (a ping every 5 minutes, a health report
 * on each probe transition, a describe after each connect, a sidecar refresh an hour); the
 * budget is a hundred times that. Counted per connection in fixed windows, in the memory of one
 * function instance: a flood that the gateway spreads over many instances still puts far more
 * than the budget on each of them, and no request to the table is spent on counting.
 */
export interface MessageBudgetPolicy {
  /** Messages one connection may send in a window. Default 100. */
  messages: number;
  /** The window. Default 10 s. */
  windowMs: number;
  /** Connections remembered at most; the oldest windows are forgotten first. Default 10,000. */
  maxTracked: number;
}

export const DEFAULT_MESSAGE_BUDGET: MessageBudgetPolicy = {
  messages: 100,
  windowMs: 10_000,
  maxTracked: 10_000,
};

/**
 * The `sidecar` route's own budget: each ask mints a token in the cluster (a request to the
 * Kubernetes API every tenant shares); an agent asks once an hour and after each reconnect.
 */
export const SIDECAR_MESSAGE_BUDGET: MessageBudgetPolicy = {
  messages: 10,
  windowMs: 60_000,
  maxTracked: 10_000,
};

export class MessageBudget {
  readonly #policy: MessageBudgetPolicy;
  /** connectionId -> the window's start and its count; Map order is insertion order. */
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(policy: MessageBudgetPolicy = DEFAULT_MESSAGE_BUDGET) {
    this.#policy = policy;
  }

  /**
   * Counts one message of the connection at `now`: `admitted` within the budget, `exceeded`
   * for the first message over it in the window (the one to act on: close the connection),
   * `over` for every later one of that window.
   */
  admit(connectionId: string, now: number): 'admitted' | 'exceeded' | 'over' {
    const { messages, windowMs } = this.#policy;
    let window = this.#windows.get(connectionId);
    if (!window || now - window.start >= windowMs || now < window.start) {
      this.#windows.delete(connectionId);
      window = { start: now, count: 0 };
      this.#windows.set(connectionId, window);
      this.#forgetOldest();
    }
    window.count += 1;
    if (window.count <= messages) return 'admitted';
    return window.count === messages + 1 ? 'exceeded' : 'over';
  }

  /** Connections tracked now (for tests and the log). */
  get tracked(): number {
    return this.#windows.size;
  }

  #forgetOldest(): void {
    // A connection's window is re-inserted when it starts, so the first keys are the oldest.
    for (const key of this.#windows.keys()) {
      if (this.#windows.size <= this.#policy.maxTracked) return;
      this.#windows.delete(key);
    }
  }
}
