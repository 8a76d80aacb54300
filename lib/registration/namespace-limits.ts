import type { EpochMillis } from '../domain/model.ts';
import type { EffectiveLimits, NamespaceSettings } from '../domain/namespace-settings.ts';
import type { ConnectRateCounter } from './connect-rate-counter.ts';
import type { NamespaceSettingsReader } from './namespace-settings-store.ts';
import type { NamespaceUsageReader } from './namespace-usage-reader.ts';

/** The longest a live count is trusted, however far the namespace is from its quota. */
export const MAX_USAGE_CACHE_MS = 5 * 60_000;
/** At its quota, a namespace's count is read again at most this often (per function instance). */
export const AT_LIMIT_RECHECK_MS = 1000;

export interface NamespaceLimitsDeps {
  settings: NamespaceSettingsReader;
  usage: NamespaceUsageReader;
  rate: ConnectRateCounter;
  /** How long a namespace's settings are trusted once read (REGISTRAR_NAMESPACE_SETTINGS_CACHE). */
  settingsCacheMs: number;
}

/**
 * What the connect path knows about each namespace's limits, kept for as long as it lives (one
 * Lambda function instance, or the local runtime): its settings, read at most once per
 * `settingsCacheMs`, and its live count, read only as often as it could have changed enough to
 * matter. The common connect therefore adds no read, only the connect-rate write. Connects that
 * miss the cache together (the local runtime runs every invocation in one process; a Lambda
 * instance runs one at a time) wait for one read instead of each sending their own: a burst of
 * 1,000 connects of a new namespace is one settings read and one live count, not 1,000 of each.
 * A failed read is shared by its waiters and not cached: the next connect reads again.
 */
export class NamespaceLimits {
  readonly #deps: NamespaceLimitsDeps;
  readonly #settings = new Map<string, { value: NamespaceSettings | undefined; until: number }>();
  readonly #usage = new Map<string, { connected: number; until: number }>();
  /** Reads in flight: callers that miss the cache at the same time share one read. */
  readonly #settingsReads = new Map<string, Promise<NamespaceSettings | undefined>>();
  readonly #usageReads = new Map<string, Promise<number>>();

  constructor(deps: NamespaceLimitsDeps) {
    this.#deps = deps;
  }

  async settings(namespace: string, now: EpochMillis): Promise<NamespaceSettings | undefined> {
    const cached = this.#settings.get(namespace);
    if (cached && now < cached.until) return cached.value;
    return shared(this.#settingsReads, namespace, async () => {
      const value = await this.#deps.settings.getSettings(namespace);
      this.#settings.set(namespace, { value, until: now + this.#deps.settingsCacheMs });
      return value;
    });
  }

  /**
   * The namespace's connected entries, from a count at most as old as it is safe to be: no more
   * entries can connect in a window than its connect rate lets in, counted twice for a fixed
   * window's burst at its edge, so a count `headroom` below the quota stays good for
   * headroom / (2 x rate). Far from the quota that is minutes (capped at MAX_USAGE_CACHE_MS);
   * close to it, every connect reads again; at it, once a second (a departure makes room).
   */
  async connected(namespace: string, now: EpochMillis, limits: EffectiveLimits): Promise<number> {
    const cached = this.#usage.get(namespace);
    if (cached && now < cached.until) return cached.connected;
    return shared(this.#usageReads, namespace, async () => {
      const connected = await this.#deps.usage.connectedEntries(namespace);
      const headroom = limits.maxEntries - connected;
      const safeMs =
        headroom <= 0
          ? AT_LIMIT_RECHECK_MS
          : Math.min(MAX_USAGE_CACHE_MS, Math.floor((headroom * 1000) / (2 * limits.connectRate)));
      this.#usage.set(namespace, { connected, until: now + safeMs });
      return connected;
    });
  }

  admit(namespace: string, perSecond: number, at: EpochMillis, op: string): Promise<boolean> {
    return this.#deps.rate.admit(namespace, perSecond, at, op);
  }
}

/** The read in flight for `key`, or a new one, forgotten once it settles (answer or failure). */
function shared<T>(
  inFlight: Map<string, Promise<T>>,
  key: string,
  read: () => Promise<T>,
): Promise<T> {
  const pending = inFlight.get(key);
  if (pending) return pending;
  const started = read().finally(() => inFlight.delete(key));
  inFlight.set(key, started);
  return started;
}
