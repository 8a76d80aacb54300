import { type ClaimDecision, claimDecision } from '../domain/address-uniqueness.ts';
import { AddressInUseError } from '../domain/errors.ts';
import { formatRef, type ObjectRef } from '../domain/model.ts';
import type {
  AddressClaim,
  AddressClaimItemStore,
  EntryLifecycleStore,
} from './entry-lifecycle-store.ts';
import type { SweepIndexStore } from './sweep-store.ts';

/** A refused claim is recorded on its holder at most this often. */
export const CONFLICT_NOTE_INTERVAL_MS = 60_000;

/** What a claim reads and writes: the claim item, its holder's entry, and that holder's deletion. */
export type AddressClaimStore = AddressClaimItemStore &
  Pick<EntryLifecycleStore, 'getEntry' | 'noteAddressConflict'> &
  Pick<SweepIndexStore, 'deleteSwept'>;

/**
 * Claims the entry's address within its network before the entry is written, so a refused
 * claim writes nothing. A holder the decision lets go is deleted (conditional on the revision
 * read, as the sweeper's deletes: a reconnect landing in between wins, and the claim is
 * decided again), then its claim is taken. Returns the entry it replaced, if any.
 */
export async function claimEntryAddress(
  store: AddressClaimStore,
  claim: AddressClaim,
): Promise<{ replaced?: ObjectRef }> {
  for (let round = 0; round < 3; round++) {
    const result = await store.claimAddress(claim);
    if (result.outcome === 'claimed') return {};
    const record = await store.getEntry(result.holder);
    const sameAddress =
      record?.entry.spec.address === claim.address &&
      (record.entry.spec.network ?? '') === claim.network;
    if (!record || !sameAddress) {
      // The claim names an entry that is gone (swept, deleted by hand) or no longer has this
      // address: it is stale, and free to take.
      if (await store.takeAddress(claim, result.holder)) return {};
      continue;
    }
    const decision = claimDecision(
      {
        entry: claim.entry,
        ...(claim.instanceId !== undefined ? { attestedInstanceId: claim.instanceId } : {}),
      },
      {
        entry: result.holder,
        autoRegistered: record.autoRegistrationGroup !== undefined,
        connected: record.connection?.connectedAt !== undefined,
        ...(record.identity?.instanceId !== undefined
          ? { attestedInstanceId: record.identity.instanceId }
          : {}),
      },
    );
    if (!decision.replace) {
      // Shown on the holder, at most once a minute: a caller of another namespace repeating
      // refused connects must not turn them into writes on the holder's partition. The read
      // above spares the write attempt in the common case; the write's own condition enforces
      // the bound, since a burst of concurrent connects all read before any of them writes.
      // Best effort: the refusal stands whether or not the holder shows it.
      const noted = record.addressConflict?.at;
      if (noted === undefined || claim.at - noted >= CONFLICT_NOTE_INTERVAL_MS) {
        await store
          .noteAddressConflict(result.holder, claim, CONFLICT_NOTE_INTERVAL_MS)
          .catch(() => false);
      }
      throw refusal(claim, result.holder, decision);
    }
    const replaced = {
      at: claim.at,
      cause: { kind: 'replaced', by: formatRef(claim.entry) },
    } as const;
    if ((await store.deleteSwept(record, replaced)) === 'conflict') continue;
    if (await store.takeAddress(claim, result.holder)) return { replaced: result.holder };
  }
  throw new Error(
    `the claim of address ${claim.address} kept changing while this VM registered; reconnect`,
  );
}

function refusal(claim: AddressClaim, holder: ObjectRef, decision: ClaimDecision) {
  const where = claim.network ? `in network '${claim.network}'` : 'without a network';
  // Another namespace's entry is not named to this caller: its name is that tenant's.
  const who =
    holder.namespace === claim.entry.namespace
      ? `WorkloadEntry ${formatRef(holder)}`
      : 'a WorkloadEntry of another namespace';
  const [what, todo] =
    decision.why === 'connected'
      ? [
          `is held by ${who}, whose VM is connected`,
          // Never "delete it": the holder is a live VM, and deleting its entry cuts it off.
          "two VMs cannot share an address in one network: check this agent's ip and network; if they are right, the connected VM holding the entry has this VM's address and its own agent must be fixed (its entry leaves when that VM stops)",
        ]
      : decision.why === 'hand-made'
        ? [
            `is held by ${who}, which was created by hand`,
            'an operator wrote that entry: change or delete it if it is stale, or use another ip or network',
          ]
        : [
            `is held by ${who} until its grace period ends`,
            'it is released when the sweeper removes that entry, or use another ip or network',
          ];
  return new AddressInUseError(`address ${claim.address} ${where} ${what}; ${todo}`);
}
