import type { AgentTiming } from './config.ts';

/**
 * Delays between attempts. All take `random` in [0, 1) so tests can pin the jitter.
 * Full jitter (AWS architecture blog, "Exponential Backoff and Jitter"): a fleet of agents
 * that lost the registrar at the same moment spreads its reconnects over the whole window
 * instead of arriving in waves (API Gateway admits 500 new connections/s per account).
 */
export function failureDelay(failures: number, timing: AgentTiming, random: number): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 30);
  const ceiling = Math.min(timing.backoffCapMs, timing.backoffBaseMs * 2 ** exponent);
  return Math.floor(random * ceiling);
}

/**
 * After a refusal (bad token, unknown group, forbidden namespace, hand-made entry in the way)
 * retrying soon cannot help, and each retry costs the registrar a Lambda run. Equal jitter
 * keeps at least half of the window, so a refused agent never retries quickly.
 */
export function refusalDelay(refusals: number, timing: AgentTiming, random: number): number {
  const exponent = Math.min(Math.max(refusals - 1, 0), 30);
  const ceiling = Math.min(timing.refusalBackoffCapMs, timing.refusalBackoffMs * 2 ** exponent);
  return Math.floor(ceiling / 2 + (random * ceiling) / 2);
}

/**
 * After a 404 (`cannot find WorkloadGroup`): the group was deleted, or is not applied yet. An
 * operator's `apply` fixes it with nothing to change on the VM, so the agent keeps trying
 * often enough to be back soon after (an accidental `delete wg` re-applied), but with equal
 * jitter like any refusal: 2-4 s, 4-8 s, 8-16 s, then 10-20 s at defaults. Once the group is
 * back every agent's next attempt comes within `missingGroupRetryMs` (20 s). The price is one
 * refused `$connect` per agent every 15 s on average while the group is missing: a fleet of
 * 7,500 VMs stays under API Gateway's 500 new connections/s per account, and a larger one is
 * throttled (429) into the failure backoff, which bounds it too.
 */
export function missingGroupDelay(refusals: number, timing: AgentTiming, random: number): number {
  const exponent = Math.min(Math.max(refusals, 0), 30) + 1;
  const ceiling = Math.min(timing.missingGroupRetryMs, timing.backoffBaseMs * 2 ** exponent);
  return Math.floor(ceiling / 2 + (random * ceiling) / 2);
}

/**
 * When to open the replacement connection: at a random point in 75-90 % of the maximum age
 * (90-108 min of API Gateway's 2 h), so agents started together do not rotate together and
 * the new connection has minutes to register before the old one is cut.
 */
export function rotationDelay(timing: AgentTiming, random: number): number {
  return Math.floor(timing.maxConnectionAgeMs * (0.75 + 0.15 * random));
}

/**
 * Statuses that mean "this request will keep failing until someone changes something"; 426:
 * this agent's version is outside the registrar's skew policy.
 */
export const REFUSAL_STATUSES: ReadonlySet<number> = new Set([400, 401, 403, 404, 409, 426]);
