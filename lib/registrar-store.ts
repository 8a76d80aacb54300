import type { CatalogStore } from './registration/catalog-store.ts';
import type { CordonStore, EntryEventStore } from './registration/entry-event-store.ts';
import type { HeartbeatStore } from './registration/heartbeat-store.ts';
import type { RegistryStore } from './registration/registry-store.ts';

/**
 * Every port of the registry on one table, as the local runtime, the CLI and tests use it:
 * lib/wiring/registry.ts composes it from the adapters (one per port), nothing forwards.
 */
export type RegistrarStore = RegistryStore &
  CatalogStore &
  HeartbeatStore &
  CordonStore &
  EntryEventStore;
