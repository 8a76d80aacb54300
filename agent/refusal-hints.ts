/**
 * What to do about each refusal. API Gateway answers an authorizer's denial with a bare
 * `{"message":"Unauthorized"}` (401) or `Forbidden` (403) and never forwards the authorizer's
 * reason, so the agent adds the likely causes itself; for 400/404/409 the registrar's own
 * message already names the problem.
 */
const HINTS: Record<number, string> = {
  400: 'fix the agent configuration named above',
  401: 'the join token is wrong, expired or revoked; create a token with registrar token create and update the token file (see docs/agent.md)',
  // API Gateway refuses a bad SigV4 signature with 403, not 401.
  403: 'the token or IAM role is not allowed for this namespace or service account (registrar policy allow), or the IAM signature was refused (clock skew, --region, credentials); see docs/agent.md',
  404: 'create the WorkloadGroup with registrar apply, or fix --group/--namespace',
  409: 'an entry with this name was created by hand; delete it or register with another address or network',
};

export function refusalHint(status: number): string | undefined {
  return HINTS[status];
}
