import type { CatalogStore } from './registration/catalog-store.ts';
import type { CordonStore, EntryEventStore } from './registration/entry-event-store.ts';
import type { HeartbeatStore } from './registration/heartbeat-store.ts';
import type { RegistryStore } from './registration/registry-store.ts';
import type { SweepLeaseStore } from './sweep/sweep-lease-store.ts';

/**
 * Every port of the registry on one table, as the local runtime, the CLI and tests use it:
 * lib/wiring/registry.ts composes it from the adapters (one per port), nothing forwards. Its
 * ports live beside the use cases that own them (lib/registration, lib/sweep), so this sum
 * lives above them, beside the record a function is given (lib/function-dependencies.ts).
 */
export type RegistrarStore = RegistryStore &
  SweepLeaseStore &
  CatalogStore &
  HeartbeatStore &
  CordonStore &
  EntryEventStore;
