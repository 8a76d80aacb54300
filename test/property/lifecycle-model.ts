/**
 * The reference model of the lifecycle rules (DESIGN.md) for one entry, as plain state: what
 * the store must end up holding after each event. Deliberately naive; it shares no code with
 * the store.
 */
import type { SweepPolicy } from '../../lib/domain/sweep-policy.ts';
import type { HealthReport } from '../../lib/store/registry-store.ts';

interface ModelHealth {
  status: 'True' | 'False';
  message?: string;
  lastProbeTime: number;
  lastTransitionTime: number;
}

interface ModelEntry {
  connectedAt?: number;
  disconnectedAt?: number;
  connections: Set<string>;
  newest: string;
  health?: ModelHealth;
}

export class LifecycleModel {
  readonly #policy: SweepPolicy;
  #entry: ModelEntry | undefined;
  /** Connections whose record the store keeps (accepted, not yet disconnected or swept). */
  readonly #records = new Set<string>();

  constructor(policy: SweepPolicy) {
    this.#policy = policy;
  }

  connect(id: string, at: number): 'created' | 'reconnected' | 'stale' {
    const entry = this.#entry;
    if (!entry) {
      this.#entry = { connectedAt: at, connections: new Set([id]), newest: id };
      this.#records.add(id);
      return 'created';
    }
    if ((entry.connectedAt ?? -Infinity) >= at || (entry.disconnectedAt ?? -Infinity) >= at)
      return 'stale';
    entry.connectedAt = at;
    entry.disconnectedAt = undefined;
    entry.connections.add(id);
    entry.newest = id;
    this.#records.add(id);
    return 'reconnected';
  }

  disconnect(
    id: string,
    at: number,
  ): 'disconnected' | 'still-held' | 'unchanged' | 'unknown-connection' {
    if (!this.#records.delete(id)) return 'unknown-connection';
    const entry = this.#entry;
    if (!entry?.connections.has(id)) return 'unchanged';
    entry.connections.delete(id);
    if (entry.connections.size > 0) return 'still-held';
    entry.connectedAt = undefined;
    entry.disconnectedAt = at;
    return 'disconnected';
  }

  health(report: HealthReport): 'transitioned' | 'refreshed' | 'ignored' | 'unknown-connection' {
    if (!this.#records.has(report.connectionId)) return 'unknown-connection';
    const entry = this.#entry;
    if (!entry || entry.newest !== report.connectionId) return 'ignored';
    if (entry.health && entry.health.lastProbeTime >= report.at) return 'ignored';
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

  sweep(now: number): void {
    const entry = this.#entry;
    if (!entry) return;
    const stale =
      entry.connectedAt !== undefined &&
      now - entry.connectedAt > 1.5 * this.#policy.maxConnectionAgeMs;
    const gone =
      entry.connectedAt === undefined &&
      entry.disconnectedAt !== undefined &&
      now - entry.disconnectedAt >= this.#policy.gracePeriodMs;
    if (!stale && !gone) return;
    for (const id of entry.connections) this.#records.delete(id);
    this.#entry = undefined;
  }

  /** The entry as `summarize` shows a stored one; undefined when there is none. */
  summary() {
    const entry = this.#entry;
    if (!entry) return undefined;
    return {
      connectedAt: entry.connectedAt,
      disconnectedAt: entry.disconnectedAt,
      connectionIds: [...entry.connections].sort(),
      newestConnectionId: entry.newest,
      health: entry.health,
    };
  }
}
