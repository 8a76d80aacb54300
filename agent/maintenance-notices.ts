import type { Logger } from './logger.ts';

/**
 * What the registrar tells this agent about an operator's maintenance (`registrar cordon`:
 * lib/protocol/maintenance-notice.ts): pushed when it happens, and repeated in every
 * `describe` reply. The agent changes nothing (the registrar keeps the entry out of traffic
 * whatever the agent reports); it logs it, once per change, so that whoever reads the VM's
 * log sees why its traffic stopped and when it came back.
 *
 * Notices are ordered by their `at`: a push that arrives after a newer one (a late delivery)
 * is ignored, and the same notice repeated (by `describe` on every rotation) is not logged
 * twice.
 */
export class MaintenanceNotices {
  readonly #logger: Logger;
  #latest: number | undefined;
  #cordoned = false;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  get cordoned(): boolean {
    return this.#cordoned;
  }

  /** One notice, from a push or from a `describe` reply's `maintenance` field (maybe absent). */
  apply(value: unknown, connection: number): void {
    const notice = parse(value);
    if (!notice) return;
    if (this.#latest !== undefined && notice.at <= this.#latest) return;
    const was = this.#cordoned;
    this.#latest = notice.at;
    this.#cordoned = notice.cordoned;
    const since = new Date(notice.at).toISOString();
    if (notice.cordoned) {
      this.#logger.warn(
        `cordoned by an operator: the registrar keeps this VM out of traffic (Healthy False, Maintenance) until it is uncordoned: ${notice.message ?? '(no message)'}`,
        { connection, since },
      );
    } else if (was) {
      this.#logger.info('uncordoned by an operator: back in traffic as its probe says', {
        connection,
        since,
      });
    }
  }
}

function parse(value: unknown): { cordoned: boolean; at: number; message?: string } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { cordoned, at, message } = value as Record<string, unknown>;
  const time = typeof at === 'string' ? Date.parse(at) : Number.NaN;
  if (typeof cordoned !== 'boolean' || Number.isNaN(time)) return undefined;
  return { cordoned, at: time, ...(typeof message === 'string' ? { message } : {}) };
}
