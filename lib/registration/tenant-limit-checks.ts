import { parseAssumedRoleArn } from '../auth/iam-caller.ts';
import { isConnected } from '../domain/entry-record.ts';
import type { EpochMillis, ObjectRef, VerifiedIdentity, WorkloadGroup } from '../domain/model.ts';
import { effectiveLimits, formatNetwork } from '../domain/namespace-settings.ts';
import {
  addressBounds,
  addressRefusal,
  connectRateRefusal,
  maxEntriesRefusal,
  type NetworkGrant,
  namespaceNetworkGrant,
  networkRefusal,
} from '../domain/tenant-limits.ts';
import { isTokenPrincipal, TOKEN_PRINCIPAL_PREFIX } from '../protocol/identity.ts';
import type { EntryLifecycleStore } from './entry-lifecycle-store.ts';
import type { NamespaceLimits } from './namespace-limits.ts';

export interface TenantLimitInput {
  namespace: string;
  group: WorkloadGroup;
  /** The entry's canonical address and network, as it would be registered. */
  address: string;
  network: string;
  identity: VerifiedIdentity;
  entry: ObjectRef;
  connectionId: string;
  at: EpochMillis;
}

/**
 * What the operator allows this connect (DESIGN: trusted data decides, fair shares), checked
 * before anything is written, cheapest and most definite first:
 * 1. the network, against the namespace's settings and the token's or policy's networks: 403;
 * 2. the address, against the namespace's and the group's ranges: 403;
 * 3. the live entries, against `maxEntries`: 429, except for an entry already connected (a
 *    rotation or a second holder adds nothing to the count, so a namespace at its quota keeps
 *    its VMs through their reconnects);
 * 4. the connect rate: 429. Counted last, so a connect refused above never uses the rate; one
 *    refused after it (a 404, a 409) has used it, as any attempt does.
 */
export async function enforceTenantLimits(
  limits: NamespaceLimits,
  store: Pick<EntryLifecycleStore, 'getEntry'>,
  input: TenantLimitInput,
): Promise<void> {
  const { namespace, at } = input;
  const settings = await limits.settings(namespace, at);
  const grants = [...namespaceNetworkGrant(settings), ...credentialNetworkGrant(input.identity)];
  const network = networkRefusal(input.network, grants);
  if (network) throw network;
  const address = addressRefusal(input.address, addressBounds(settings, input.group));
  if (address) throw address;

  const effective = effectiveLimits(settings);
  const connected = await limits.connected(namespace, at, effective);
  if (connected >= effective.maxEntries) {
    // One read, only at the quota: a reconnect of a connected entry is let in.
    const record = await store.getEntry(input.entry);
    if (!record || !isConnected(record)) {
      throw maxEntriesRefusal(settings, namespace, connected, effective.maxEntries);
    }
  }
  if (!(await limits.admit(namespace, effective.connectRate, at, input.connectionId))) {
    throw connectRateRefusal(settings, namespace, effective.connectRate);
  }
}

/** The networks the caller's join token or IAM policy restricts it to, if it does. */
function credentialNetworkGrant(identity: VerifiedIdentity): NetworkGrant[] {
  const networks = identity.networks;
  if (networks === undefined) return [];
  const listed = (extra: string) => [...networks, extra].map(formatNetwork).join(',');
  const namespace = identity.namespace ?? '<namespace>';
  const serviceAccount = identity.serviceAccount
    ? ` --service-account ${identity.serviceAccount}`
    : '';
  if (isTokenPrincipal(identity)) {
    const id = identity.principal.slice(TOKEN_PRINCIPAL_PREFIX.length);
    return [
      {
        who: `join token ${id}`,
        networks,
        allow: (network) =>
          `registrar token create -n ${namespace}${serviceAccount} --networks ${listed(network)}`,
      },
    ];
  }
  const role = parseAssumedRoleArn(identity.principal)?.roleArn ?? identity.principal;
  return [
    {
      who: `role ${role} in namespace '${namespace}'`,
      networks,
      allow: (network) =>
        `registrar policy allow --role-arn ${role} -n ${namespace}${serviceAccount} --networks ${listed(network)}`,
    },
  ];
}
