import type { NamespaceSettings } from '../domain/namespace-settings.ts';
import type { NamespaceSettingsStore } from '../registration/namespace-settings-store.ts';

/**
 * The namespaces' settings as the projector function reads them: one Query of their partition,
 * kept for `ttlMs` by the function instance, so stream batches (several a second in a busy
 * fleet) do not each read it. A change reaches the cluster within that time, or at the next
 * full reconcile after it.
 */
export function cachedSettingsListing(
  store: Pick<NamespaceSettingsStore, 'listSettings'>,
  ttlMs: number,
  now: () => number = Date.now,
): Pick<NamespaceSettingsStore, 'listSettings'> {
  let cached: { until: number; value: Promise<NamespaceSettings[]> } | undefined;
  return {
    listSettings() {
      const at = now();
      if (cached && at < cached.until) return cached.value;
      const value = store.listSettings();
      cached = { until: at + ttlMs, value };
      // A failed read is not kept: the next run asks again.
      value.catch(() => {
        cached = undefined;
      });
      return value;
    },
  };
}
