/**
 * API Gateway's route throttle for the agents' WebSocket stage: how the stack sizes it
 * (infra/constructs/websocket-api.ts) and how `npm start`'s gateway applies it
 * (infra/local/route-buckets.ts). No CDK here, so the local runtime can load it.
 */

/** The stack's `fleetSize` when none is given; the local gateway is throttled for it too. */
export const DEFAULT_FLEET_SIZE = 10_000;

/** A stage's default route throttle: each route gets a token bucket of this rate and size. */
export interface RouteThrottle {
  /** Messages per second, steady. */
  rateLimit: number;
  /** The bucket's size: messages at once. */
  burstLimit: number;
}

/** API Gateway's default account limits (per region), which the stage cannot exceed. */
export const ACCOUNT_LIMITS = { requestsPerSecond: 10_000, burst: 5_000, connectsPerSecond: 500 };

/**
 * The stage's route throttle for a fleet of `fleetSize` VMs:
 *   steady  = N x (1/300 s pings + 3 messages per connection / 108 min average lifetime)
 *   rate    = 2 x steady + 3 x 500   (headroom, plus a reconnect storm: connect, describe and
 *                                     health for each of the 500 new connections/s the account
 *                                     admits)
 *   burst   = 2 x rate
 * capped at the account's default limits (raise those first for a larger stage limit).
 * 1,000 VMs: 1,508/s; 100,000: 2,260/s. The old fixed 200/s throttled pings alone past 60,000.
 */
export function routeThrottle(fleetSize: number): RouteThrottle {
  const perVmPerSecond = 1 / 300 + 3 / (108 * 60);
  const rate = Math.ceil(2 * fleetSize * perVmPerSecond + 3 * ACCOUNT_LIMITS.connectsPerSecond);
  return {
    rateLimit: Math.min(rate, ACCOUNT_LIMITS.requestsPerSecond),
    burstLimit: Math.min(2 * rate, ACCOUNT_LIMITS.burst),
  };
}

/**
 * `<rate>` or `<rate>/<burst>` (messages per second per route, and the bucket's size; the
 * burst defaults to twice the rate, as the stack sizes it), e.g. `1567/3134`. Throws naming
 * the value; the caller names where it came from.
 */
export function parseRouteThrottle(text: string): RouteThrottle {
  const match = /^\s*(\d+)\s*(?:\/\s*(\d+)\s*)?$/.exec(text);
  const rateLimit = Number(match?.[1]);
  const burstLimit = match?.[2] === undefined ? 2 * rateLimit : Number(match[2]);
  if (!match || rateLimit < 1 || burstLimit < 1) {
    throw new Error(
      'must be <rate>[/<burst>], whole numbers of messages per second per route and at once, at least 1 (e.g. 100/200)',
    );
  }
  return { rateLimit, burstLimit };
}
