import { type Clock, sleep } from './clock.ts';
import { type AgentLink, isNotRegistered, RequestError } from './connection.ts';
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
  /**
   * The current connection cannot carry health: the registrar said it holds no entry, or
   * reports went unacknowledged twice in a row. Only a new connection helps; the reporter
   * waits for `resend` (the next connection) before sending again.
   */
  onStuck?: (link: AgentLink, reason: string) => void;
}

/** Unacknowledged reports in a row (timeouts or error replies) that make a connection suspect. */
export const UNACKED_LIMIT = 2;

/**
 * Delivers the latest health state until the registrar acknowledges it:
 * - after every (re)connect the state is sent again on the new connection (`resend`), first;
 * - an ack counts only if it came through the connection that is still the current one;
 * - no reply within the ack timeout: sent again at once (the timeout already spaced it out);
 *   an error reply: sent again after `retryDelayMs`;
 * - `NotRegistered`, or {@link UNACKED_LIMIT} unacknowledged reports in a row on one
 *   connection: that connection is given up on (`onStuck`) and nothing more is sent on it,
 *   since a registrar that does not count this connection will not start to by being asked
 *   again; the supervisor opens a new one, which `resend`s.
 * Only one report is in flight; a newer state simply replaces the one being retried.
 */
export class HealthReporter {
  readonly #options: HealthReporterOptions;
  #state: HealthState | undefined;
  #acked = true;
  #sending = false;
  #stopped = false;
  /** The connection given up on: nothing is sent on it again. */
  #stuckOn: AgentLink | undefined;

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

  /** A new connection became the current one: re-send the last known state on it. */
  resend(): void {
    this.#stuckOn = undefined;
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
    let unacked = 0;
    let unackedOn: AgentLink | undefined;
    try {
      for (;;) {
        const link = this.#options.currentLink();
        const state = this.#state;
        if (
          this.#stopped ||
          this.#acked ||
          state === undefined ||
          link === undefined ||
          link.closed ||
          link === this.#stuckOn
        )
          return;
        if (link !== unackedOn) {
          unacked = 0;
          unackedOn = link;
        }
        this.#options.onEvent?.({ type: 'health-sent', healthy: state.healthy });
        try {
          // The registrar accepts messages up to 1024 characters (MAX_HEALTH_MESSAGE_LENGTH).
          const message = state.message?.slice(0, 1000);
          await link.request('health', { healthy: state.healthy, ...(message ? { message } : {}) });
          unacked = 0;
          if (state === this.#state && link === this.#options.currentLink()) {
            this.#acked = true;
            this.#options.onEvent?.({ type: 'health-acked', healthy: state.healthy });
          }
        } catch (error) {
          const kind = error instanceof RequestError ? error.kind : 'error';
          // Closed: the reconnect (or the rotation's new connection) sends it again.
          if (kind === 'closed') continue;
          unacked += 1;
          const reason = (error as Error).message;
          if (isNotRegistered(error) || unacked >= UNACKED_LIMIT) {
            this.#stuckOn = link;
            this.#options.logger.warn('health report not acknowledged on this connection', {
              reason,
              unacknowledged: unacked,
            });
            this.#options.onStuck?.(
              link,
              isNotRegistered(error)
                ? `the registrar says this connection holds no entry (${reason})`
                : `${unacked} health reports in a row were not acknowledged (${reason})`,
            );
            return;
          }
          this.#options.logger.warn('health report not acknowledged; sending it again', {
            reason,
          });
          if (kind === 'error') await sleep(this.#options.clock, this.#options.retryDelayMs);
        }
      }
    } finally {
      this.#sending = false;
    }
  }
}
