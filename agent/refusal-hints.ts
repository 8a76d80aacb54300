import type { AgentAuth } from './config.ts';
import { AGENT_VERSION } from './version.ts';

/**
 * What to do about each refusal. API Gateway answers an authorizer's denial with a bare
 * `{"message":"Unauthorized"}` (401) or `Forbidden` (403) and never forwards the authorizer's
 * reason, so the agent adds the likely causes itself, for the way it authenticates: a token
 * agent gets token advice naming where its token came from (a file is read again on every
 * connect; a variable or the config file only at start), an IAM agent gets IAM advice. For
 * 400/404/409 the registrar's own message already names the problem. A bare 409 (API Gateway
 * may drop a `$connect` refusal's body) can be any of its codes, and one of them is a live VM
 * holding the address: the hint lists them and never advises deleting what may be live.
 */
export interface HintContext {
  auth: AgentAuth;
  namespace: string;
}

/** What API Gateway (and the local gateway) says to an unsigned connect in IAM mode. */
const MISSING_SIGNATURE = 'Missing Authentication Token';

const COMMON: Record<number, string> = {
  400: 'fix the agent configuration named above',
  404: 'create the WorkloadGroup with registrar apply, or fix --group/--namespace',
  409: 'another connected VM may hold this address (check --ip and --network: an address is unique within a network), or an entry of this name was created by hand or belongs to another group; registrar describe we <name> -n <namespace> says which (do not delete an entry whose VM is connected: that cuts it off)',
  // API Gateway forwards no body for a refused $connect: the agent names its own version, the
  // registrar's log names both (docs/operations.md, version skew).
  426: `this agent is registrar-agent ${AGENT_VERSION}, outside the versions the registrar accepts (its minor release and the two before it); install the agent of the registrar's release (docs/operations.md, version skew)`,
};

/**
 * With the registrar's own reason (its code), only the hints its message does not give. The
 * 409s' messages say what to do for their holder, so nothing is added: a generic "delete it"
 * beside a live VM's AddressInUse would be advice to cut that VM off.
 */
const WITH_REASON: Record<number, string> = {
  400: COMMON[400] as string,
  404: COMMON[404] as string,
};

/**
 * `reasonGiven`: the refusal carries the registrar's own reason (a local gateway forwards it;
 * on AWS only the message routes do), which already says what is wrong and what to create; the
 * hint then only adds where a new token goes, so no advice is said twice.
 */
export function refusalHint(
  status: number,
  context: HintContext,
  reasonGiven = false,
  message?: string,
): string | undefined {
  const { auth, namespace } = context;
  if (auth.mode === 'token' && message === MISSING_SIGNATURE) {
    // API Gateway's answer to an unsigned connect on an IAM-authorized route: no token helps.
    return 'the registrar is deployed with IAM authorization and ignores join tokens: run the agent with --auth iam (its instance profile signs the connect; see docs/agent.md)';
  }
  if (reasonGiven) {
    if (auth.mode === 'token' && (status === 401 || status === 403)) {
      return `then ${replaceToken(auth)}`;
    }
    return WITH_REASON[status];
  }
  if (auth.mode === 'iam') {
    if (status === 401) {
      // API Gateway's IAM authorization refuses with 403; a 401 comes from the token authorizer.
      return 'the registrar expects a join token (it is deployed with token authorization): run the agent with REGISTRAR_AGENT_TOKEN or --token-file instead of --auth iam (see docs/agent.md)';
    }
    if (status === 403) {
      // API Gateway refuses a bad SigV4 signature with 403, not 401.
      return `the IAM signature was refused (clock skew, --region, credentials), the role lacks execute-api:Invoke on $connect, the registry does not allow the role for namespace ${namespace} (registrar policy allow --role-arn <arn> -n ${namespace}), or the instance identity document was refused (missing, not this instance's, or its address or zone disagrees with --ip/--locality); see docs/agent.md`;
    }
    return COMMON[status];
  }
  const create = `registrar token create -n ${namespace} [--service-account <the group's serviceAccount>]`;
  if (status === 401) {
    return `the join token is wrong, expired or revoked; create one with ${create} and ${replaceToken(auth)}`;
  }
  if (status === 403) {
    return `the join token is not allowed here: it must be for namespace ${namespace} and, if the group's template names one, for its service account (${create}), then ${replaceToken(auth)}`;
  }
  return COMMON[status];
}

/** Where the new token goes, as the agent reads it. */
function replaceToken(auth: Extract<AgentAuth, { mode: 'token' }>): string {
  if (auth.tokenFile !== undefined) {
    return `write it to the token file ${auth.tokenFile} (read again on every connect: no restart needed)`;
  }
  const source = auth.tokenSource ?? 'REGISTRAR_AGENT_TOKEN';
  if (source.startsWith('REGISTRAR_AGENT_')) {
    return `set ${source} to it (the token came from the environment), then restart the agent`;
  }
  return `set auth.token in ${source} to it, then restart the agent`;
}
