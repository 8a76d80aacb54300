import { type Clock, sleep } from './clock.ts';
import { type AgentLink, RequestError } from './connection.ts';
import type { Logger } from './logger.ts';
import type { HealthState } from './probes/probe-runner.ts';

export interface HealthReporterOptions {
  clock: Clock;
  logger: Logger;
  /** How long to wait before sending again after an error reply. */
  retryDelayMs: number;
  /** The connection health goes through now (the newest one), if any. */
  currentLink: () => AgentLink | undefined;
  onEvent?: (event: { type: 'health-sent' | 'health-acked'; healthy: boolean }) => void;
}

/**
 * Delivers the latest health state until the registrar acknowledges it. The registrar only
 * counts reports from an entry's newest connection, so:
 * - after every (re)connect the state is sent again on the new connection (`resend`), first;
 * - an ack counts only if it came through the connection that is still the newest: during a
 *   rotation an ack on the old connection may be for a report the registrar ignored;
 * - no reply within the ack timeout: sent again at once (the timeout already spaced it out);
 *   an error reply: sent again after `retryDelayMs`.
 * Only one report is in flight; a newer state simply replaces the one being retried.
 */
export class HealthReporter {
  readonly #options: HealthReporterOptions;
  #state: HealthState | undefined;
  #acked = true;
  #sending = false;
  #stopped = false;

  constructor(options: HealthReporterOptions) {
    this.#options = options;
  }

  get state(): HealthState | undefined {
    return this.#state;
  }

  /** A new state from the probe runner (a transition). */
  report(state: HealthState): void {
    this.#state = state;
    this.#acked = false;
    void this.#pump();
  }

  /** A new connection became the newest: re-send the last known state on it. */
  resend(): void {
    if (this.#state === undefined) return;
    this.#acked = false;
    void this.#pump();
  }

  /** The group's probe went away: nothing to report any more. */
  clear(): void {
    this.#state = undefined;
    this.#acked = true;
  }

  stop(): void {
    this.#stopped = true;
  }

  async #pump(): Promise<void> {
    if (this.#sending) return;
    this.#sending = true;
    try {
      for (;;) {
        const link = this.#options.currentLink();
        const state = this.#state;
        if (
          this.#stopped ||
          this.#acked ||
          state === undefined ||
          link === undefined ||
          link.closed
        )
          return;
        this.#options.onEvent?.({ type: 'health-sent', healthy: state.healthy });
        try {
          // The registrar accepts messages up to 1024 characters (MAX_HEALTH_MESSAGE_LENGTH).
          const message = state.message?.slice(0, 1000);
          await link.request('health', { healthy: state.healthy, ...(message ? { message } : {}) });
          if (state === this.#state && link === this.#options.currentLink()) {
            this.#acked = true;
            this.#options.onEvent?.({ type: 'health-acked', healthy: state.healthy });
          }
        } catch (error) {
          const kind = error instanceof RequestError ? error.kind : 'error';
          // Closed: the reconnect (or the rotation's new connection) sends it again.
          if (kind === 'closed') continue;
          this.#options.logger.warn('health report not acknowledged; sending it again', {
            reason: (error as Error).message,
          });
          if (kind === 'error') await sleep(this.#options.clock, this.#options.retryDelayMs);
        }
      }
    } finally {
      this.#sending = false;
    }
  }
}
