import type { EntryRecord } from '../domain/entry-record.ts';
import { NotRegisteredError } from '../domain/errors.ts';
import { formatRef, type ObjectRef } from '../domain/model.ts';
import { NoServiceAccountError } from '../protocol/sidecar-message.ts';

/**
 * Who a mesh identity is minted for: the service account of an entry that the asking
 * connection holds, and nothing else. The minting port (mesh-issuer.ts) accepts only a
 * MeshSubject, and the only way to get one is `MeshSubject.ofHeldEntry`, which reads the
 * namespace and service account off the stored entry after checking that the connection is
 * one of its holders. A token for any other service account cannot be asked for: no input of
 * the agent reaches the subject (the `sidecar` message has no field for it), and TypeScript's
 * private `#brand` keeps a look-alike object from passing for one.
 */
export class MeshSubject {
  readonly #brand = 'held-entry';
  readonly entry: ObjectRef;
  readonly namespace: string;
  readonly serviceAccount: string;

  private constructor(entry: ObjectRef, serviceAccount: string) {
    this.entry = entry;
    this.namespace = entry.namespace;
    this.serviceAccount = serviceAccount;
  }

  /** The Kubernetes username its tokens carry (`sub`). */
  get username(): string {
    return `system:serviceaccount:${this.namespace}:${this.serviceAccount}`;
  }

  /** True only for subjects made here; a structural copy is refused by the issuer. */
  static is(value: unknown): value is MeshSubject {
    return typeof value === 'object' && value !== null && #brand in value;
  }

  /**
   * The subject of `record` for `connectionId`. NotRegistered when the connection does not
   * hold the entry (swept, deleted, taken over, or a connection that never registered it);
   * NoServiceAccount when the entry names none: a token for the namespace's `default` account
   * would give the VM whatever that account may do, so it is never minted by omission.
   */
  static ofHeldEntry(
    record: EntryRecord | undefined,
    ref: ObjectRef,
    connectionId: string,
  ): MeshSubject {
    if (!record?.connection?.connectionIds.includes(connectionId)) {
      throw new NotRegisteredError(
        `this connection holds no WorkloadEntry (${formatRef(ref)} ${record ? 'is held by other connections' : 'does not exist'}); no mesh identity is minted for it; reconnect to register`,
      );
    }
    const serviceAccount = record.entry.spec.serviceAccount;
    if (!serviceAccount) {
      throw new NoServiceAccountError(
        `WorkloadEntry ${formatRef(ref)} names no serviceAccount; set spec.template.serviceAccount in WorkloadGroup ${ref.namespace}/${record.autoRegistrationGroup ?? '?'} (serviceAccount: default for the namespace's default account) and reconnect`,
      );
    }
    return new MeshSubject({ namespace: ref.namespace, name: ref.name }, serviceAccount);
  }
}
