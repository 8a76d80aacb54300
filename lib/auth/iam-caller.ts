import { ForbiddenError, InvalidRequestError, UnauthenticatedError } from '../domain/errors.ts';
import type { VerifiedIdentity } from '../domain/model.ts';
import type { PolicyReader } from './policy-store.ts';

/**
 * IAM mode: API Gateway has verified the SigV4 signature and the caller's
 * `execute-api:Invoke` permission before `$connect` runs, and hands the caller over as
 * `requestContext.identity.userArn`. An EC2 instance signs with its instance profile's role,
 * so the caller is an assumed-role session:
 *   arn:aws:sts::123456789012:assumed-role/web-vm/i-0abc123def4567890
 * Which namespaces that role may register into is the registry's decision, from a stored
 * policy (`registrar policy allow`), deny by default: `execute-api:Invoke` alone only proves
 * the caller may open a connection.
 */
export interface IamCaller {
  /** The verified session ARN, kept as the entry's principal (it names the instance). */
  userArn: string;
  /** `arn:<partition>:iam::<account>:role/<name>`: what policies are keyed by. */
  roleArn: string;
  account: string;
  roleName: string;
  sessionName: string;
}

// IAM's character sets: role names [\w+=,.@-]{1,64}, session names [\w+=,.@-]{2,64}.
const ASSUMED_ROLE =
  /^arn:(aws|aws-cn|aws-us-gov):sts::(\d{12}):assumed-role\/([\w+=,.@-]{1,64})\/([\w+=,.@-]{2,64})$/;
const ROLE =
  /^arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):role\/(?:[\x21-\x7e]*\/)?([\w+=,.@-]{1,64})$/;

/** The caller behind an assumed-role session ARN; undefined for anything else. */
export function parseAssumedRoleArn(userArn: string): IamCaller | undefined {
  const match = ASSUMED_ROLE.exec(userArn);
  if (!match) return undefined;
  const [, partition, account, roleName, sessionName] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    userArn,
    roleArn: `arn:${partition}:iam::${account}:role/${roleName}`,
    account,
    roleName,
    sessionName,
  };
}

/**
 * A role ARN as policies store it. The session ARN of an assumed role does not carry the
 * role's path (`role/ops/web-vm` signs as `assumed-role/web-vm/...`), so the path is dropped:
 * role names are unique in an account regardless of path.
 */
export function normalizeRoleArn(text: string): string {
  const match = ROLE.exec(text.trim());
  if (!match) {
    throw new InvalidRequestError(
      `invalid role ARN '${text}': expected arn:aws:iam::<account>:role/<name>`,
      'roleArn',
    );
  }
  const [, partition, account, roleName] = match as unknown as [string, string, string, string];
  return `arn:${partition}:iam::${account}:role/${roleName}`;
}

/**
 * The identity of an IAM-mode connect, allowed only by a stored policy for the caller's role
 * and the namespace it asks for. 401 without a verified caller, 403 otherwise.
 */
export async function authorizeIamCaller(
  policies: PolicyReader,
  userArn: string | null | undefined,
  namespace: string,
): Promise<VerifiedIdentity> {
  if (typeof userArn !== 'string' || userArn === '') {
    throw new UnauthenticatedError('missing IAM identity; sign the connect request with SigV4');
  }
  const caller = parseAssumedRoleArn(userArn);
  if (!caller) {
    throw new ForbiddenError(
      `caller '${userArn}' is not an assumed-role session; connect with the credentials of an IAM role (an EC2 instance profile), not of an IAM user`,
    );
  }
  const policy = await policies.getPolicy(caller.roleArn, namespace);
  if (!policy) {
    throw new ForbiddenError(
      `role '${caller.roleArn}' may not register in namespace '${namespace}'; allow it with: registrar policy allow --role-arn ${caller.roleArn} -n ${namespace}`,
    );
  }
  const identity: VerifiedIdentity = { principal: caller.userArn, namespace };
  if (policy.serviceAccount !== undefined) identity.serviceAccount = policy.serviceAccount;
  if (policy.networks !== undefined) identity.networks = policy.networks;
  return identity;
}
