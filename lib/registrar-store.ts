import type { CatalogStore, InstanceStore } from './registration/catalog-store.ts';
import type { CordonStore, EntryEventStore } from './registration/entry-event-store.ts';
import type {
  AddressClaimItemStore,
  ConnectionRecordStore,
  EntryLifecycleStore,
  HolderBeatStore,
} from './registration/entry-lifecycle-store.ts';
import type { HeartbeatStore } from './registration/heartbeat-store.ts';
import type {
  DepartureStore,
  DisruptionStore,
  LivenessMarkStore,
  SweepIndexStore,
} from './registration/sweep-store.ts';
import type { SweepLeaseStore } from './sweep/sweep-lease-store.ts';

/**
 * What registration, health and the sweep read and write, as one record: the sum of the ports
 * that lib/registration defines beside its use cases (one adapter each). No use case takes it:
 * each names its own port, picked from these (`ReportHealthStore`, `SweepStore`, ...). Every
 * state change is one conditional write; losing a race is an outcome, not an error.
 */
export interface RegistryStore
  extends EntryLifecycleStore,
    AddressClaimItemStore,
    HolderBeatStore,
    ConnectionRecordStore,
    SweepIndexStore,
    DepartureStore,
    LivenessMarkStore,
    DisruptionStore,
    InstanceStore {}

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
