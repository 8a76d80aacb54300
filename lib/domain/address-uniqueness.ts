/**
 * An address is unique within a network (Istio's maintainers hold the mesh to it: istio#43950,
 * istio#44128): two live entries for one IP would route one address to two workloads. Every
 * entry claims its address; who may take a claim from the entry that holds it is decided here.
 * Pure: the facts in, the decision out.
 */
import type { ObjectRef } from './model.ts';

export interface Claimant {
  entry: ObjectRef;
  /** Set when AWS signed the address for this instance (IAM mode with attestation). */
  attestedInstanceId?: string;
}

export interface ClaimHolder {
  entry: ObjectRef;
  autoRegistered: boolean;
  /** It has a holder (a connection) now. */
  connected: boolean;
  /** The instance AWS signed the holder's address for, when its last connect was attested. */
  attestedInstanceId?: string;
}

export type ClaimDecision =
  | { replace: true; why: 'attested' | 'moved' }
  | { replace: false; why: 'connected' | 'other-namespace' | 'hand-made' };

/**
 * - An attested claimant replaces a holder of its own namespace: AWS says the address is this
 *   instance's now (the same instance moving groups, make before break, or an address EC2
 *   gave to a new instance after the old one went).
 * - An attested claimant replaces a holder of another namespace only when the holder is the
 *   same instance (it moved namespaces). AWS signs the private IP, not the network: the network
 *   is still the agent's word, and private ranges overlap across VPCs, so a genuine document
 *   of an instance of `evil` may carry the IP of a `prod` VM in another VPC. Naming `prod`'s
 *   network must not delete `prod`'s entry: such a claim is judged as an unattested one below
 *   (refused while the holder is connected, and until its grace period ends after).
 * - Otherwise the address is the agent's word (token mode, or IAM without a document), and
 *   the first claim wins while it lives: a connected holder keeps its address. Last-claim
 *   would let any caller of any namespace take a live VM's address out of the mesh.
 * - A disconnected holder of the claimant's own namespace is replaced at once: the VM moved
 *   to another group (it stopped in `g1` and came back in `g2`), and two entries for one
 *   address must not wait out the grace period side by side.
 * - A disconnected holder of another namespace is not: a tenant whose token names only its
 *   own namespace must not delete another's entry by claiming its address; the sweeper
 *   removes it after its grace period, and the address is free then.
 */
export function claimDecision(claimant: Claimant, holder: ClaimHolder): ClaimDecision {
  if (!holder.autoRegistered) return { replace: false, why: 'hand-made' };
  if (claimant.attestedInstanceId !== undefined) {
    const sameNamespace = holder.entry.namespace === claimant.entry.namespace;
    if (sameNamespace || holder.attestedInstanceId === claimant.attestedInstanceId) {
      return { replace: true, why: 'attested' };
    }
  }
  if (holder.connected) return { replace: false, why: 'connected' };
  if (holder.entry.namespace !== claimant.entry.namespace) {
    return { replace: false, why: 'other-namespace' };
  }
  return { replace: true, why: 'moved' };
}
