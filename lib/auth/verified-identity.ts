import type { Config } from '../config.ts';
import { UnauthenticatedError } from '../domain/errors.ts';
import type { VerifiedIdentity } from '../domain/model.ts';
import type { WebSocketConnectEvent } from '../protocol/websocket-events.ts';
import { authorizeIamCaller } from './iam-caller.ts';
import type { PolicyReader } from './policy-store.ts';

// Who a `$connect` is: here in lib/auth beside the IAM rule it applies, not in lib/protocol,
// which lib/auth reads the token principal's shape from (an arrow each way between the two
// folders before issue 45).

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
