import type { VerifiedIdentity } from '../domain/model.ts';
import type { StoredToken } from '../domain/stored-token.ts';

/**
 * The caller of a `$connect`, as API Gateway established it. Identity never comes from what
 * the agent sends (query string, headers): only from the authorizer's context, which API
 * Gateway writes after the authorizer allowed the request, or from its own SigV4 check.
 */

export const TOKEN_PRINCIPAL_PREFIX = 'token:';

/** `token:<id>`: the principal of a join token (the id is not secret; the secret never leaves). */
export function tokenPrincipal(token: Pick<StoredToken, 'id'>): string {
  return `${TOKEN_PRINCIPAL_PREFIX}${token.id}`;
}

export function isTokenPrincipal(identity: VerifiedIdentity): boolean {
  return identity.principal.startsWith(TOKEN_PRINCIPAL_PREFIX);
}

/**
 * The authorizer's context for a verified join token. API Gateway accepts only flat
 * string/number/boolean values, so an absent service account is left out, not null.
 */
export function authorizerContext(token: StoredToken): Record<string, string> {
  const context: Record<string, string> = {
    principal: tokenPrincipal(token),
    namespace: token.namespace,
    tokenId: token.id,
  };
  if (token.serviceAccount) context.serviceAccount = token.serviceAccount;
  // A list as JSON: context values are flat strings, and "" (no network) must survive.
  if (token.networks !== undefined) context.networks = JSON.stringify(token.networks);
  return context;
}
