import { buildRegistration } from '../domain/build-entry.ts';
import { ConflictError, ForbiddenError, NotFoundError } from '../domain/errors.ts';
import {
  type ConnectRequest,
  type EpochMillis,
  formatRef,
  type ObjectRef,
  type VerifiedIdentity,
  type WorkloadGroup,
} from '../domain/model.ts';
import { isTokenPrincipal } from '../protocol/identity.ts';
import type { ConnectChange, RegistryStore } from '../store/registry-store.ts';
import type { GroupReader } from './group-cache.ts';

export interface RegisterWorkloadInput {
  request: ConnectRequest;
  /** From the authorizer, never from the agent. */
  identity: VerifiedIdentity;
  connectionId: string;
  /** Server time of the connect (API Gateway's `connectedAt`). */
  connectedAt: EpochMillis;
}

export interface RegisterWorkloadDeps {
  store: Pick<RegistryStore, 'connect'>;
  /** The store itself, or a short-lived cache in front of it (createGroupCache). */
  groups: GroupReader;
  /** The `istio.io/workloadController` value. */
  controller: string;
}

export interface RegisterWorkloadResult {
  outcome: 'created' | 'reconnected' | 'stale';
  entry: ObjectRef;
}

/**
 * `$connect`: creates the VM's WorkloadEntry from its group, or marks the existing one
 * connected again (DESIGN lifecycle rules 2-7). Refusals happen before any write.
 */
export async function registerWorkload(
  deps: RegisterWorkloadDeps,
  input: RegisterWorkloadInput,
): Promise<RegisterWorkloadResult> {
  const { request, identity } = input;
  checkNamespace(identity, request.namespace);
  const ref = { namespace: request.namespace, name: request.group };
  const stored = await deps.groups.getGroup(ref);
  if (!stored) throw new NotFoundError(`cannot find WorkloadGroup ${formatRef(ref)}`);
  checkServiceAccount(identity, stored.group);

  const change: ConnectChange = {
    ...buildRegistration(stored.group, request, input.connectedAt),
    groupGeneration: stored.generation,
    connectionId: input.connectionId,
    connectedAt: input.connectedAt,
    controller: deps.controller,
    identity,
  };
  const entry = { namespace: request.namespace, name: change.entry.metadata.name };
  const outcome = await deps.store.connect(change);
  if (outcome === 'conflict') {
    // Rule 7: an entry someone wrote by hand is theirs; registering over it would hijack it.
    throw new ConflictError(
      `WorkloadEntry ${formatRef(entry)} exists and was not auto-registered; it is never overwritten: delete it or connect with another ip or network`,
    );
  }
  return { outcome, entry };
}

/** A join token is scoped to one namespace; 403 before anything is read for another one. */
function checkNamespace(identity: VerifiedIdentity, namespace: string): void {
  if (identity.namespace !== undefined && identity.namespace !== namespace) {
    throw new ForbiddenError(
      `join token is for namespace '${identity.namespace}', not '${namespace}'; create a token for namespace '${namespace}'`,
    );
  }
}

/**
 * A group whose template names a service account gives its VMs that mesh identity, so only a
 * token issued for exactly that service account, or in IAM mode a role allowed for exactly
 * that service account, may register into it. A template without one accepts any caller of
 * its namespace.
 */
function checkServiceAccount(identity: VerifiedIdentity, group: WorkloadGroup): void {
  const required = group.spec.template.serviceAccount;
  if (!required || identity.serviceAccount === required) return;
  const has = identity.serviceAccount
    ? `service account '${identity.serviceAccount}'`
    : 'no service account';
  if (!isTokenPrincipal(identity)) {
    throw new ForbiddenError(
      `caller '${identity.principal}' is allowed ${has} but WorkloadGroup ${formatRef(group.metadata)} runs as '${required}'; allow its role with registrar policy allow --service-account ${required}`,
    );
  }
  throw new ForbiddenError(
    `join token has ${has} but WorkloadGroup ${formatRef(group.metadata)} runs as '${required}'; create a token for service account '${required}'`,
  );
}
