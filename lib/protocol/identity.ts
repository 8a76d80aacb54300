import { authorizeIamCaller } from '../auth/iam-caller.ts';
import type { Config } from '../config.ts';
import { UnauthenticatedError } from '../domain/errors.ts';
import type { VerifiedIdentity } from '../domain/model.ts';
import type { PolicyReader } from '../store/policy-store.ts';
import type { StoredToken } from '../store/token-store.ts';
import type { WebSocketConnectEvent } from './websocket-events.ts';

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

/**
 * Token mode: the authorizer's context. IAM mode: the SigV4-verified caller, allowed for the
 * requested namespace only by a stored policy (lib/auth/iam-caller.ts), deny by default.
 */
export async function verifiedIdentity(
  event: Pick<WebSocketConnectEvent, 'requestContext'>,
  authMode: Config['authMode'],
  iam: { policies: PolicyReader | undefined; namespace: string },
): Promise<VerifiedIdentity> {
  if (authMode === 'iam') {
    const policies = iam.policies ?? NO_POLICIES;
    return authorizeIamCaller(policies, event.requestContext.identity?.userArn, iam.namespace);
  }
  return tokenIdentity(event);
}

/** Deny by default: without a policy store no IAM caller is allowed anywhere. */
const NO_POLICIES: PolicyReader = { getPolicy: async () => undefined };

/** Token mode: what functions/authorize.ts wrote into the context (see authorizerContext). */
function tokenIdentity(event: Pick<WebSocketConnectEvent, 'requestContext'>): VerifiedIdentity {
  const context = event.requestContext.authorizer;
  const principal = context?.principal;
  const namespace = context?.namespace;
  // No context means the route has no authorizer: refuse rather than trust the agent.
  if (typeof principal !== 'string' || typeof namespace !== 'string' || principal === '') {
    throw new UnauthenticatedError();
  }
  const identity: VerifiedIdentity = { principal, namespace };
  const serviceAccount = context?.serviceAccount;
  if (typeof serviceAccount === 'string' && serviceAccount !== '') {
    identity.serviceAccount = serviceAccount;
  }
  const networks = context?.networks;
  if (networks !== undefined) identity.networks = contextNetworks(networks);
  return identity;
}

/** The token's networks as the authorizer wrote them; anything else fails closed (none). */
function contextNetworks(value: unknown): string[] {
  try {
    const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : undefined;
    if (Array.isArray(parsed) && parsed.every((item) => typeof item === 'string')) return parsed;
  } catch {
    // not JSON: refused below like any malformed list
  }
  return [];
}
