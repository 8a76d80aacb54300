import { parseAssumedRoleArn } from '../auth/iam-caller.ts';
import type { PolicyReader } from '../auth/policy-store.ts';
import type { TokenStore } from '../auth/token-store.ts';
import type { Config } from '../config.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import { ForbiddenError } from '../domain/errors.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { MeshSubject } from './mesh-subject.ts';

/** Who asked, as API Gateway tells every message of the connection (never the agent's word). */
export interface AskingCaller {
  /** Token mode: the authorizer's context names the join token the connection presented. */
  tokenId: string | undefined;
  /** IAM mode: the SigV4 caller, when API Gateway repeats it on messages. */
  userArn: string | undefined;
}

export interface StandingDeps {
  authMode: Config['authMode'];
  instanceAttestation: Config['instanceAttestation'];
  tokens: Pick<TokenStore, 'getToken'>;
  policies: PolicyReader | undefined;
}

/**
 * A connection lives up to 2 h; what authenticated it may be revoked meanwhile. A mesh
 * identity is a new credential, so the caller's standing is checked again, now, before each
 * one is minted (one read):
 * - token mode: the join token must still exist, be neither revoked nor expired, and still
 *   allow the entry's namespace and service account;
 * - IAM mode: the role's allow rule for the namespace must still exist and allow the service
 *   account; with attestation required, the entry's newest connect must have been attested,
 *   and a caller API Gateway names on the message must be that instance's session.
 * Forbidden otherwise: the registration stands (cutting it is revocation's job), but no new
 * identity is handed out.
 */
export async function checkCallerStanding(
  deps: StandingDeps,
  caller: AskingCaller,
  record: EntryRecord,
  subject: MeshSubject,
  now: EpochMillis,
): Promise<void> {
  if (deps.authMode === 'token') {
    const token = caller.tokenId ? await deps.tokens.getToken(caller.tokenId) : undefined;
    if (!token) refuse('the join token of this connection no longer exists');
    if (token.revokedAt !== undefined) refuse(`join token ${token.id} was revoked`);
    if (token.expiresAt <= now) refuse(`join token ${token.id} has expired`);
    if (token.namespace !== subject.namespace) {
      refuse(
        `join token ${token.id} is for namespace ${token.namespace}, not ${subject.namespace}`,
      );
    }
    if (token.serviceAccount !== undefined && token.serviceAccount !== subject.serviceAccount) {
      refuse(
        `join token ${token.id} is for service account ${token.serviceAccount}, not ${subject.serviceAccount}`,
      );
    }
    return;
  }
  const principal = caller.userArn || record.identity?.principal;
  const iamCaller = principal ? parseAssumedRoleArn(principal) : undefined;
  if (!iamCaller) refuse('the connection has no IAM role session to check');
  const policy = await deps.policies?.getPolicy(iamCaller.roleArn, subject.namespace);
  if (!policy) {
    refuse(`role ${iamCaller.roleArn} may no longer register in namespace ${subject.namespace}`);
  }
  if (policy.serviceAccount !== undefined && policy.serviceAccount !== subject.serviceAccount) {
    refuse(
      `role ${iamCaller.roleArn} is allowed service account ${policy.serviceAccount}, not ${subject.serviceAccount}`,
    );
  }
  if (deps.instanceAttestation === 'required') {
    const attested = record.identity?.instanceId;
    if (attested === undefined || record.instanceId !== attested) {
      refuse(
        'the entry was not registered with a verified instance identity document; reconnect with one',
      );
    }
    if (iamCaller.sessionName !== attested) {
      refuse(`caller session ${iamCaller.sessionName} is not the attested instance ${attested}`);
    }
  }
}

function refuse(why: string): never {
  throw new ForbiddenError(`no mesh identity: ${why}`);
}
