/**
 * The reference model of the lifecycle rules (DESIGN.md) for one entry, as plain state: what
 * the store must end up holding after each event. Deliberately naive; it shares no code with
 * the store.
 */
import type { SweepPolicy } from '../../lib/domain/sweep-policy.ts';

interface ModelHealth {
  status: 'True' | 'False';
  message?: string;
  lastProbeTime: number;
  lastTransitionTime: number;
}

interface ModelEntry {
  connectedAt?: number;
  disconnectedAt?: number;
  /** Holder -> when it connected. */
  holders: Map<string, number>;
  newest?: string;
  /** Connections whose disconnect came while they held nothing. */
  departed: Set<string>;
  health?: ModelHealth;
  /** How the last holder went away (while disconnected). */
  departure?: 'clean' | 'abnormal';
}

export interface ModelReport {
  connectionId: string;
  healthy: boolean;
  message?: string;
  at: number;
}

export class LifecycleModel {
  readonly #policy: SweepPolicy;
  #entry: ModelEntry | undefined;

  constructor(policy: SweepPolicy) {
    this.#policy = policy;
  }

  /** Rule 8: every accepted connect holds the entry, unless its own disconnect came first. */
  connect(id: string, at: number): 'created' | 'reconnected' | 'joined' | 'departed' {
    const entry = this.#entry;
    if (!entry) {
      this.#entry = {
        connectedAt: at,
        holders: new Map([[id, at]]),
        newest: id,
        departed: new Set(),
      };
      return 'created';
    }
    if (entry.departed.has(id)) return 'departed';
    entry.holders.set(id, at);
    if (entry.connectedAt !== undefined && entry.connectedAt > at) return 'joined';
    entry.connectedAt = at;
    entry.disconnectedAt = undefined;
    entry.departure = undefined;
    entry.newest = id;
    return 'reconnected';
  }

  disconnect(
    id: string,
    at: number,
    departure: 'clean' | 'abnormal' = 'abnormal',
  ): 'disconnected' | 'still-held' | 'not-holder' {
    const entry = this.#entry;
    if (!entry) return 'not-holder';
    if (!entry.holders.has(id)) {
      entry.departed.add(id);
      return 'not-holder';
    }
    return this.drop([id], at, departure);
  }

  /** Holders proved gone (a liveness check: abnormal), or one that disconnected. */
  drop(
    ids: string[],
    at: number,
    departure: 'clean' | 'abnormal' = 'abnormal',
  ): 'disconnected' | 'still-held' | 'not-holder' {
    const entry = this.#entry;
    if (!entry) return 'not-holder';
    for (const id of ids) entry.holders.delete(id);
    if (entry.holders.size > 0) return 'still-held';
    entry.connectedAt = undefined;
    entry.newest = undefined;
    entry.disconnectedAt = at;
    entry.departure = departure;
    return 'disconnected';
  }

  health(report: ModelReport): 'transitioned' | 'refreshed' | 'superseded' | 'not-holder' {
    const entry = this.#entry;
    if (!entry?.holders.has(report.connectionId)) return 'not-holder';
    if (entry.health && entry.health.lastProbeTime >= report.at) return 'superseded';
    const status = report.healthy ? 'True' : 'False';
    const transitioned = entry.health?.status !== status;
    const health: ModelHealth = {
      status,
      lastProbeTime: report.at,
      lastTransitionTime:
        transitioned || !entry.health ? report.at : entry.health.lastTransitionTime,
    };
    if (!report.healthy && report.message !== undefined) health.message = report.message;
    entry.health = health;
    return transitioned ? 'transitioned' : 'refreshed';
  }

  /**
   * The sweeper's rules. `held` (fail static): an entry that went away abnormally, or looks
   * stale, is never deleted; a clean departure is deleted after the grace period regardless.
   */
  sweep(now: number, held = false): void {
    const entry = this.#entry;
    if (!entry) return;
    if (held && !(entry.connectedAt === undefined && entry.departure === 'clean')) return;
    const stale =
      entry.connectedAt !== undefined &&
      now - entry.connectedAt > 1.5 * this.#policy.maxConnectionAgeMs;
    const gone =
      entry.connectedAt === undefined &&
      entry.disconnectedAt !== undefined &&
      now - entry.disconnectedAt >= this.#policy.gracePeriodMs;
    if (stale || gone) this.#entry = undefined;
  }

  holders(): string[] {
    return [...(this.#entry?.holders.keys() ?? [])].sort();
  }

  /** The entry as `summarize` shows a stored one; undefined when there is none. */
  summary() {
    const entry = this.#entry;
    if (!entry) return undefined;
    return {
      connectedAt: entry.connectedAt,
      disconnectedAt: entry.disconnectedAt,
      connectionIds: [...entry.holders.keys()].sort(),
      holderSince: Object.fromEntries(entry.holders),
      newestConnectionId: entry.newest,
      departure: entry.departure,
      health: entry.health,
    };
  }
}
