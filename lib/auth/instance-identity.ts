import { parseAssumedRoleArn } from '../auth/iam-caller.ts';
import type { StringMap, VerifiedIdentity } from '../domain/model.ts';
import { isTokenPrincipal } from '../protocol/identity.ts';

/**
 * The connect label a token-mode agent sets to the instance id it read from IMDS
 * (`registrar.io/instance-id=i-0abc...`). Istio label keys allow a DNS prefix.
 */
export const INSTANCE_ID_LABEL = 'registrar.io/instance-id';

/** EC2 instance ids: `i-` and 8 (older) or 17 hexadecimal digits. */
const INSTANCE_ID = /^i-(?:[0-9a-f]{8}|[0-9a-f]{17})$/;

export function isInstanceId(text: string): boolean {
  return INSTANCE_ID.test(text);
}

/**
 * The EC2 instance a connect comes from, from a source the registrar trusts:
 * - IAM mode with a verified instance identity document: the instance it names (already
 *   checked to be the role session name, lib/auth/instance-attestation.ts).
 * - IAM mode: the role session name of the verified caller. EC2 signs with its instance
 *   profile as `assumed-role/<role>/<instance id>`; any other session name (a person, a CI
 *   job) names no instance. A label is ignored: the signature is the better witness.
 * - token mode: the agent's label. A token proves the namespace, not the instance, so the
 *   label is believed for one purpose only: an EC2 event about that instance removes this
 *   entry at once. A VM that lies can only hasten the removal of its own entry.
 */
export function instanceIdOf(identity: VerifiedIdentity, labels: StringMap): string | undefined {
  if (identity.instanceId !== undefined) return identity.instanceId;
  if (!isTokenPrincipal(identity)) {
    const session = parseAssumedRoleArn(identity.principal)?.sessionName;
    return session !== undefined && isInstanceId(session) ? session : undefined;
  }
  const label = labels[INSTANCE_ID_LABEL];
  return label !== undefined && isInstanceId(label) ? label : undefined;
}
