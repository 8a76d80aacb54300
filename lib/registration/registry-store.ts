import type { InstanceStore } from './catalog-store.ts';
import type {
  AddressClaimItemStore,
  ConnectionRecordStore,
  EntryLifecycleStore,
  HolderBeatStore,
} from './entry-lifecycle-store.ts';
import type {
  DepartureStore,
  DisruptionStore,
  LivenessMarkStore,
  SweepIndexStore,
} from './sweep-store.ts';

/**
 * What registration, health and the sweep need from storage: the sum of the ports beside it
 * (one adapter each), for the use cases that take it whole and for lib/wiring/registry.ts,
 * which composes it (the sweeper run's lease is lib/sweep's own port). A use case narrows it to the calls it makes (`Pick<RegistryStore, ...>`).
 * Every state change is one conditional write; losing a race is an outcome, not an error.
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
