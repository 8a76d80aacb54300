import { instanceIdOf } from '../auth/instance-identity.ts';
import { type AgentSkewPolicy, agentSkewRefusal, UNVERSIONED_AGENT } from '../domain/agent-skew.ts';
import { buildRegistration } from '../domain/build-entry.ts';
import { entryOrigin } from '../domain/entry-name.ts';
import {
  ConflictError,
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
  UnsupportedAgentVersionError,
} from '../domain/errors.ts';
import { heartbeatOf } from '../domain/heartbeat.ts';
import { toldAtConnect } from '../domain/holder-heartbeat.ts';
import {
  type ConnectRequest,
  type EpochMillis,
  formatRef,
  type ObjectRef,
  type VerifiedIdentity,
  type WorkloadEntrySpec,
  type WorkloadGroup,
} from '../domain/model.ts';
import { reservedLabelProblems } from '../domain/reserved-labels.ts';
import { isTokenPrincipal } from '../protocol/identity.ts';
import { type AddressClaimStore, claimEntryAddress } from './address-claim.ts';
import type {
  ConnectChange,
  ConnectOutcome,
  EntryLifecycleStore,
} from './entry-lifecycle-store.ts';
import { type MonotonicClock, monotonicNow, withinGroupReadWindow } from './group-read-window.ts';
import type { NamespaceLimits } from './namespace-limits.ts';
import { enforceTenantLimits } from './tenant-limit-checks.ts';

export interface RegisterWorkloadInput {
  request: ConnectRequest;
  /** From the authorizer, never from the agent. */
  identity: VerifiedIdentity;
  connectionId: string;
  /** Server time of the connect (API Gateway's `connectedAt`). */
  connectedAt: EpochMillis;
  /** The entry the authorizer named for this connection (token mode); see carried-entry.ts. */
  carried: ObjectRef | undefined;
}

/** What a registration reads and writes: the group, the entry, and the entry's address claim. */
export type RegisterWorkloadStore = Pick<
  EntryLifecycleStore,
  'getGroup' | 'connect' | 'withdrawCreated'
> &
  AddressClaimStore;

export interface RegisterWorkloadDeps {
  store: RegisterWorkloadStore;
  /** The `istio.io/workloadController` value. */
  controller: string;
  /** Which agent versions are accepted; absent, every one (callers other than `$connect`). */
  agentSkew?: AgentSkewPolicy;
  /** What the operator allows each namespace (quotas, networks, ranges); absent, no limits. */
  limits?: NamespaceLimits;
  /** Times the group read to the entry write (group-read-window.ts); default performance.now. */
  clock?: MonotonicClock;
}

export interface RegisterWorkloadResult {
  outcome: 'created' | 'reconnected' | 'joined';
  entry: ObjectRef;
  /** An entry that held this address and was replaced (a VM that moved groups). */
  replaced?: ObjectRef;
}

/**
 * `$connect`: creates the VM's WorkloadEntry from its group, or makes this connection one of
 * the existing entry's holders (DESIGN lifecycle rules 1-8). Refusals write no entry.
 */
export async function registerWorkload(
  deps: RegisterWorkloadDeps,
  input: RegisterWorkloadInput,
): Promise<RegisterWorkloadResult> {
  const { request, identity } = input;
  checkNamespace(identity, request.namespace);
  // Before any read: an agent outside the skew policy is told so, naming both versions.
  const skew = deps.agentSkew && agentSkewRefusal(request.agentVersion, deps.agentSkew);
  if (skew) throw new UnsupportedAgentVersionError(skew);
  const groupRef = { namespace: request.namespace, name: request.group };
  const clock = deps.clock ?? monotonicNow;
  const readStartedAt = clock();
  // Read every time, consistently: once `apply` or `delete wg` returns, connects see it.
  const stored = await deps.store.getGroup(groupRef);
  if (!stored) throw new NotFoundError(`cannot find WorkloadGroup ${formatRef(groupRef)}`);

  const built = buildRegistration(stored.group, request, input.connectedAt);
  checkReservedLabels(request, stored.group, built.entry.spec);
  const entry = { namespace: request.namespace, name: built.entry.metadata.name };
  if (input.carried && formatRef(input.carried) !== formatRef(entry)) {
    // Only an authorizer of another release names another entry (a deploy in progress):
    // registering here would leave $disconnect looking at the wrong entry. A 500; the agent
    // retries once the deploy settled.
    throw new Error(
      `the authorizer named ${formatRef(input.carried)} but the connect registers ${formatRef(entry)}`,
    );
  }
  // Before anything is written: a refusal here leaves no trace but its metric.
  if (deps.limits) {
    await enforceTenantLimits(deps.limits, deps.store, {
      namespace: request.namespace,
      group: stored.group,
      address: built.entry.spec.address ?? '',
      network: built.entry.spec.network ?? '',
      identity,
      entry,
      connectionId: input.connectionId,
      at: input.connectedAt,
    });
  }
  const templateRefusal = serviceAccountRefusal(identity, stored.group);
  const change: ConnectChange = {
    ...built,
    origin: entryOrigin(request.group, built.entry.spec.address ?? '', request.network),
    groupGeneration: stored.generation,
    connectionId: input.connectionId,
    connectedAt: input.connectedAt,
    controller: deps.controller,
    // The credential's networks were checked above; the entry records who connected.
    identity: withoutGrants(identity),
    agentVersion: request.agentVersion ?? UNVERSIONED_AGENT,
    // What this connection's `describe` will name, from the group read above, recorded on the
    // holder by the same write: the sweeper holds it to exactly this from its first ping,
    // however late it learns of the group's setting (issue 44).
    heartbeat: toldAtConnect(heartbeatOf(stored.group), request.agentVersion, input.connectedAt),
    // Rule 6: who may control an existing entry depends on that entry, not on the template:
    // a caller the template refuses may still hold an entry built from an older template.
    mayCreate: templateRefusal === undefined,
    recordConnection: input.carried === undefined,
  };
  const instanceId = instanceIdOf(identity, request.labels);
  if (instanceId !== undefined) change.instanceId = instanceId;
  // Before the entry: a refused claim writes nothing. One conditional write per connect. A
  // caller the template refuses can only join an existing entry, which holds its claim.
  const { replaced } = templateRefusal
    ? {}
    : await claimEntryAddress(deps.store, {
        address: built.entry.spec.address ?? '',
        network: built.entry.spec.network ?? '',
        entry,
        at: input.connectedAt,
        ...(identity.instanceId !== undefined ? { instanceId: identity.instanceId } : {}),
      });
  const outcome = await deps.store.connect(change);
  refuse(outcome, entry, templateRefusal);
  // A new entry written within the window is in the listing of any cascade of a deletion its
  // group read missed; a slower one reads the group again (group-read-window.ts).
  if (outcome === 'created' && !withinGroupReadWindow(readStartedAt, clock)) {
    await ensureGroupStillExists(deps, stored.group, change);
  }
  return {
    outcome: outcome as RegisterWorkloadResult['outcome'],
    entry,
    ...(replaced ? { replaced } : {}),
  };
}

function refuse(
  outcome: ConnectOutcome,
  entry: ObjectRef,
  templateRefusal: ForbiddenError | undefined,
): void {
  const name = formatRef(entry);
  switch (outcome) {
    case 'conflict':
      // Rule 7: an entry someone wrote by hand is theirs; registering over it would hijack it.
      throw new ConflictError(
        `WorkloadEntry ${name} exists and was not auto-registered; it is never overwritten: delete it or connect with another ip or network`,
      );
    case 'collision':
      // Rule 4: names are not injective; two VMs must never share one entry.
      throw new ConflictError(
        `WorkloadEntry ${name} belongs to another group, address or network whose name is spelled the same; connect with a distinct network, or rename the group`,
        'NameCollision',
      );
    case 'forbidden':
      throw (
        templateRefusal ??
        new ForbiddenError(
          `the caller may not control WorkloadEntry ${name}: it runs as another service account; use a token or role for that service account`,
        )
      );
    case 'departed':
      throw new ConflictError(
        'this connection was already disconnected before its connect was processed; reconnect',
        'Departed',
      );
  }
}

/**
 * `delete wg` deletes the group, then the entries it auto-registered. A connect that read the
 * group before the delete and created its entry after the cascade listed the entries would
 * leave an entry owned by a deleted group. For a connect slower than the cascade's wait
 * (group-read-window.ts), reading the group again after creating closes that gap: either the
 * cascade saw the entry, or this read sees the group gone (or replaced by a new one with
 * another uid) and takes the entry back. Only on 'created', so a reconnect costs no extra read.
 */
async function ensureGroupStillExists(
  deps: RegisterWorkloadDeps,
  group: WorkloadGroup,
  change: ConnectChange,
): Promise<void> {
  const now = await deps.store.getGroup(group.metadata);
  if (now && now.group.metadata.uid === group.metadata.uid) return;
  await deps.store.withdrawCreated(change.entry.metadata, change.origin);
  throw new NotFoundError(
    `cannot find WorkloadGroup ${formatRef(group.metadata)}: it was deleted while this VM registered`,
  );
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
 * A group whose template names a service account gives new VMs that mesh identity, so only a
 * token issued for exactly that service account, or in IAM mode a role allowed for exactly
 * that service account, may create an entry from it. A template without one lets any caller
 * of its namespace create.
 */
function serviceAccountRefusal(
  identity: VerifiedIdentity,
  group: WorkloadGroup,
): ForbiddenError | undefined {
  const required = group.spec.template.serviceAccount || undefined;
  if (!required || identity.serviceAccount === required) return undefined;
  const has = identity.serviceAccount
    ? `service account '${identity.serviceAccount}'`
    : 'no service account';
  if (!isTokenPrincipal(identity)) {
    return new ForbiddenError(
      `caller '${identity.principal}' is allowed ${has} but WorkloadGroup ${formatRef(group.metadata)} runs as '${required}'; allow its role with registrar policy allow --service-account ${required}`,
    );
  }
  return new ForbiddenError(
    `join token has ${has} but WorkloadGroup ${formatRef(group.metadata)} runs as '${required}'; create a token for service account '${required}'`,
  );
}

function withoutGrants(identity: VerifiedIdentity): VerifiedIdentity {
  const { networks: _checked, ...recorded } = identity;
  return recorded;
}

/**
 * An agent's labels that Istio or Kubernetes read as topology or security must agree with the
 * entry's placement or come from the group (lib/domain/reserved-labels.ts): 400, nothing
 * written. Checked on every connect, a reconnect too: a reconnect writes no labels, but an
 * agent that claims another network is refused whether or not its entry exists yet.
 */
function checkReservedLabels(
  request: ConnectRequest,
  group: WorkloadGroup,
  spec: WorkloadEntrySpec,
) {
  const problems = reservedLabelProblems(request.labels, {
    network: spec.network,
    locality: spec.locality,
    groupLabels: { ...group.spec.template.labels, ...group.spec.metadata?.labels },
  });
  if (problems.length > 0) throw new InvalidRequestError(problems.join('; '), 'label');
}
