import type { ObjectRef } from '../domain/model.ts';
import { tokenPrincipal } from '../protocol/identity.ts';
import type { HeldEntry, HeldEntryReader } from './held-entry-reader.ts';
import { parseAssumedRoleArn } from './iam-caller.ts';

/**
 * Revoking a credential cuts what it holds (DESIGN "Trusted data decides"): `registrar token
 * revoke` and `registrar policy revoke` refuse the next connect, and also close the live
 * connections the credential authenticated, so their entries leave within seconds instead
 * of when API Gateway ends the connection (up to 2 h later). A closed agent's reconnect is
 * refused (401 for a revoked token, 403 without an allow rule); its entry, disconnected
 * cleanly, leaves after the grace period like any VM that stopped.
 *
 * Who authenticated a connection is recorded per holder, with the holder (`by:<connection
 * id>`, lib/store/dynamodb-entry-writes.ts), because an entry's holders need not share one
 * credential: two agents with different tokens may hold one entry, and only the newest
 * connect's identity is kept on the entry.
 */
export type RevokedCredential =
  | { kind: 'token'; id: string; namespace: string }
  | { kind: 'policy'; roleArn: string; namespace: string };

/** A connection to close, and the entry it holds (for messages). */
export interface CutConnection {
  entry: ObjectRef;
  connectionId: string;
}

/** Whether `principal` (`token:<id>` or an assumed-role session ARN) came from the credential. */
export function authenticatedBy(credential: RevokedCredential, principal: string): boolean {
  if (credential.kind === 'token') return principal === tokenPrincipal({ id: credential.id });
  return parseAssumedRoleArn(principal)?.roleArn === credential.roleArn;
}

/**
 * The holders of the entry that the credential authenticated. A holder recorded before
 * holders carried their principal is judged by the entry's identity (the newest connect's),
 * the best the registry knows of it: revoking errs towards closing.
 */
export function connectionsToCut(held: HeldEntry, credential: RevokedCredential): string[] {
  return held.holders
    .filter((holder) => {
      const principal = holder.principal ?? held.newestPrincipal;
      return principal !== undefined && authenticatedBy(credential, principal);
    })
    .map((holder) => holder.connectionId);
}

/** Every connection of the credential's namespace it authenticated. */
export async function connectionsAuthenticatedBy(
  reader: HeldEntryReader,
  credential: RevokedCredential,
): Promise<CutConnection[]> {
  const found: CutConnection[] = [];
  for await (const held of reader.connectedEntries(credential.namespace)) {
    for (const connectionId of connectionsToCut(held, credential)) {
      found.push({ entry: held.entry, connectionId });
    }
  }
  return found;
}

/** How the credential is named in messages. */
export function describeCredential(credential: RevokedCredential): string {
  return credential.kind === 'token'
    ? `join token ${credential.id}`
    : `role ${credential.roleArn} in namespace "${credential.namespace}"`;
}
