import { NotRegisteredError } from '../domain/errors.ts';
import { type EpochMillis, formatRef, type ObjectRef, type StringMap } from '../domain/model.ts';
import {
  SIDECAR_ACTION,
  type SidecarReply,
  SidecarUnavailableError,
} from '../protocol/sidecar-message.ts';
import type { EntryLifecycleStore } from '../registration/entry-lifecycle-store.ts';
import { type HolderLookupStore, holderOf } from '../registration/holder.ts';
import { buildBootstrap } from './bootstrap.ts';
import { type AskingCaller, checkCallerStanding, type StandingDeps } from './caller-standing.ts';
import type { MeshIssuer } from './mesh-issuer.ts';
import type { MeshSettings } from './mesh-settings.ts';
import { MeshSubject } from './mesh-subject.ts';

/** What issuing a sidecar's identity reads: the connection's entry and the entry's group. */
export type IssueSidecarStore = HolderLookupStore &
  Pick<EntryLifecycleStore, 'getEntry' | 'getGroup'>;

export interface IssueSidecarDeps extends StandingDeps {
  store: IssueSidecarStore;
  issuer: MeshIssuer;
  settings: MeshSettings;
}

export interface SidecarRequest {
  connectionId: string;
  /** The entry the authorizer named for this connection (token mode). */
  carried: ObjectRef | undefined;
  caller: AskingCaller;
  /** When the request was received (server time). */
  at: EpochMillis;
}

/**
 * `sidecar`: the bootstrap of the entry this connection holds, and a fresh ServiceAccount
 * token for that entry's service account. Reads: the entry (consistent: a connection taken
 * off it a moment ago is not served), the caller's token or allow rule, the entry's group (its
 * labels alone name the canonical service); then the cluster:
 * the root certificate (cached) and one TokenRequest. Nothing is written to the registry.
 */
export async function issueSidecar(
  deps: IssueSidecarDeps,
  request: SidecarRequest,
): Promise<SidecarReply> {
  const holder = await holderOf(deps.store, request.connectionId, request.carried);
  if (!holder) throw new NotRegisteredError();
  const record = await deps.store.getEntry(holder.entry);
  const subject = MeshSubject.ofHeldEntry(record, holder.entry, request.connectionId);
  // ofHeldEntry threw unless the record exists and this connection holds it.
  const held = record as NonNullable<typeof record>;
  await checkCallerStanding(deps, request.caller, held, subject, request.at);

  const rootCert = deps.settings.rootCert ?? (await deps.issuer.rootCert(subject.namespace));
  if (rootCert === undefined) {
    throw new SidecarUnavailableError(
      `namespace ${subject.namespace} has no ConfigMap istio-ca-root-cert (istiod publishes it into every namespace it watches): is Istio installed and the namespace part of the mesh? Or give the root certificate with REGISTRAR_MESH_ROOT_CERT`,
    );
  }
  const { settings } = deps;
  const minted = await deps.issuer.mintToken(
    subject,
    settings.tokenAudience,
    settings.tokenLifetimeSeconds,
  );
  const spec = held.entry.spec;
  const groupName = held.autoRegistrationGroup ?? held.entry.metadata.name;
  const bootstrap = buildBootstrap(
    {
      namespace: subject.namespace,
      group: groupName,
      serviceAccount: subject.serviceAccount,
      labels: spec.labels ?? held.entry.metadata.labels ?? {},
      groupLabels: await groupLabelsOf(deps.store, subject.namespace, groupName),
      ports: spec.ports ?? {},
      network: spec.network,
    },
    settings,
    rootCert,
  );
  // At least one second: a token the API server says is already expired is still handed out
  // (the agent logs its expiry), rather than an answer the agent cannot schedule from.
  const expiresInSeconds = Math.max(
    1,
    Math.floor((minted.expiresAt.getTime() - request.at) / 1000),
  );
  return {
    action: SIDECAR_ACTION,
    ok: true,
    entry: formatRef(subject.entry),
    serviceAccount: subject.serviceAccount,
    bootstrap,
    token: {
      value: minted.token,
      audience: settings.tokenAudience,
      expiresAt: minted.expiresAt.toISOString(),
      expiresInSeconds,
    },
  };
}

/**
 * The labels of the entry's group (template, then `spec.metadata`, as the entry merged them).
 * A group deleted meanwhile takes its entries with it (`delete wg` cascades): no identity then.
 */
async function groupLabelsOf(
  store: Pick<IssueSidecarStore, 'getGroup'>,
  namespace: string,
  name: string,
): Promise<StringMap> {
  const stored = await store.getGroup({ namespace, name });
  if (!stored) {
    throw new SidecarUnavailableError(
      `cannot find WorkloadGroup ${namespace}/${name}: its entries are removed with it; no mesh identity is minted`,
    );
  }
  const { spec } = stored.group;
  return { ...spec.template.labels, ...spec.metadata?.labels };
}
