import { silenceBoundMs } from '../domain/heartbeat.ts';
import {
  DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE,
  demandPerMinute,
  type GroupDemand,
  groupPeriodMs,
  quotaStretch,
} from '../domain/heartbeat-pace.ts';
import type { ShareGroup } from './heartbeat-flows.ts';
import { type GroupHeartbeat, groupKeyOf } from './heartbeat-groups.ts';
import type { HeldObservation } from './heartbeat-store.ts';

/**
 * When each group of a lane's share is checked within one run (issue 44: per-tenant pace).
 * Each group has its own period (lib/domain/heartbeat-pace.ts: half the shortest bound its
 * holders are held to, stretched when its namespace asks for more checks than its quota) and
 * is due at 0, p, 2p, ... of the run; a pass serves the groups due at its start. A slot a slow
 * pass overran is skipped, never made up, so the passes never outlast the run's interval.
 */
export class GroupSchedule {
  readonly #sweepIntervalMs: number;
  readonly #periods = new Map<string, number>();
  readonly #nextAt = new Map<string, number>();
  /** Each group's setting as last planned: a group whose setting changed is due at once. */
  readonly #settings = new Map<string, string>();
  /** By namespace: its demand (checks a minute), quota and stretch, for the run's report. */
  readonly pace = new Map<string, NamespacePace>();

  constructor(sweepIntervalMs: number) {
    this.#sweepIntervalMs = sweepIntervalMs;
  }

  /**
   * The share's groups and their periods. `observed`: what the lanes last saw of each group
   * (held entries, the shortest bound a holder was held to), all lanes' summed when there are
   * several, so every lane stretches a namespace alike. A group new to the run is due `at`.
   */
  plan(
    share: readonly ShareGroup[],
    groups: ReadonlyMap<string, GroupHeartbeat>,
    observed: Readonly<Record<string, HeldObservation>>,
    quotas: Readonly<Record<string, number>>,
    at: number,
  ): void {
    const unstretched = new Map<string, number>();
    const byNamespace = new Map<string, GroupDemand[]>();
    for (const [key, group] of groups) {
      const seen = observed[key];
      const period = groupPeriodMs(
        silenceBoundMs(group.heartbeat),
        seen?.shortestMs,
        this.#sweepIntervalMs,
      );
      unstretched.set(key, period);
      const namespace = key.slice(0, key.indexOf('/'));
      const list = byNamespace.get(namespace) ?? [];
      list.push({ group: key, held: seen?.held ?? 0, periodMs: period });
      byNamespace.set(namespace, list);
    }
    this.pace.clear();
    for (const [namespace, demands] of byNamespace) {
      const quota = quotas[namespace] ?? DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE;
      const demand = demandPerMinute(demands);
      this.pace.set(namespace, { demand, quota, stretch: quotaStretch(demand, quota) });
    }
    this.#periods.clear();
    for (const { ref } of share) {
      const key = groupKeyOf(ref.namespace, ref.name);
      const stretch = this.pace.get(ref.namespace)?.stretch ?? 1;
      const base = unstretched.get(key) ?? this.#sweepIntervalMs;
      this.#periods.set(
        key,
        stretch > 1 ? Math.min(this.#sweepIntervalMs, Math.ceil(base * stretch)) : base,
      );
      // New to the run, or its setting changed (an apply the run saw between passes): due
      // now, so its live agents are told the change within a pass, not at its next slot.
      const setting = `${groups.get(key)?.heartbeat.intervalMs}x${groups.get(key)?.heartbeat.misses}`;
      if (!this.#nextAt.has(key) || this.#settings.get(key) !== setting) {
        this.#nextAt.set(key, Math.min(this.#nextAt.get(key) ?? at, at));
      }
      this.#settings.set(key, setting);
    }
    for (const key of [...this.#nextAt.keys()]) {
      if (!this.#periods.has(key)) this.#nextAt.delete(key);
    }
  }

  periodOf(key: string): number {
    return this.#periods.get(key) ?? this.#sweepIntervalMs;
  }

  /** The share's groups due at `t` (ms since the run began). */
  due(t: number): string[] {
    return [...this.#nextAt].filter(([, at]) => at <= t).map(([key]) => key);
  }

  /** The groups passed over, from a pass that ended at `endedAt`: due again at their next slot. */
  passed(keys: readonly string[], endedAt: number): void {
    for (const key of keys) {
      const period = this.periodOf(key);
      this.#nextAt.set(key, (Math.floor(endedAt / period) + 1) * period);
    }
  }

  /** These groups are due again at `t` (a change seen while a pass over them went on). */
  dueAt(keys: readonly string[], t: number): void {
    for (const key of keys) if (this.#nextAt.has(key)) this.#nextAt.set(key, t);
  }

  /** When the next group is due (ms since the run began); Infinity with none. */
  earliest(): number {
    return Math.min(Number.POSITIVE_INFINITY, ...this.#nextAt.values());
  }

  /** The shortest period of the given groups (a pass over them must take less). */
  shortestPeriodOf(keys: readonly string[]): number {
    return Math.min(this.#sweepIntervalMs, ...keys.map((key) => this.periodOf(key)));
  }
}

/** A namespace's heartbeat checks a minute asked for, its quota, and its stretch (1: within). */
export interface NamespacePace {
  demand: number;
  quota: number;
  stretch: number;
}

/** Folds one checked entry into a pass's observation of its group. */
export function observe(
  observations: Map<string, HeldObservation>,
  key: string,
  shortestHeldMs: number | undefined,
): void {
  const seen = observations.get(key) ?? { held: 0 };
  seen.held += 1;
  if (shortestHeldMs !== undefined) {
    seen.shortestMs =
      seen.shortestMs === undefined ? shortestHeldMs : Math.min(seen.shortestMs, shortestHeldMs);
  }
  observations.set(key, seen);
}

/**
 * Every lane's observations summed (held) and narrowed (shortest), so that each lane paces a
 * namespace by its whole fleet, not by the share it happens to read.
 */
export function combinedObservations(
  states: Iterable<{ held?: Record<string, HeldObservation> }>,
): Record<string, HeldObservation> {
  const all: Record<string, HeldObservation> = {};
  for (const state of states) {
    for (const [key, seen] of Object.entries(state.held ?? {})) {
      const sum = all[key] ?? { held: 0 };
      sum.held += seen.held;
      if (seen.shortestMs !== undefined) {
        sum.shortestMs =
          sum.shortestMs === undefined
            ? seen.shortestMs
            : Math.min(sum.shortestMs, seen.shortestMs);
      }
      all[key] = sum;
    }
  }
  return all;
}
