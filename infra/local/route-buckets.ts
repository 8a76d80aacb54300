import type { RouteThrottle } from '../route-throttle.ts';

/**
 * The stage's route throttle as API Gateway applies it to messages: one token bucket per
 * route key (`ping`, `health`, ...), `rateLimit` tokens a second up to `burstLimit`. A message
 * that finds its route's bucket empty is not delivered: API Gateway answers the client itself,
 * `{"message":"Too Many Requests",...}`, and runs no integration (nor the `ping` mock). The
 * buckets are the stage's, shared by every connection: one client flooding a route throttles
 * that route for all of them, which is what the agent has to live with (docs/security.md).
 */
export class RouteBuckets {
  readonly #limits: RouteThrottle;
  readonly #now: () => number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(limits: RouteThrottle, now: () => number) {
    this.#limits = limits;
    this.#now = now;
  }

  /** Takes one token of the route's bucket; false when it is empty (the message is throttled). */
  take(routeKey: string): boolean {
    const now = this.#now();
    const { rateLimit, burstLimit } = this.#limits;
    const bucket = this.#buckets.get(routeKey) ?? { tokens: burstLimit, at: now };
    const tokens = Math.min(burstLimit, bucket.tokens + ((now - bucket.at) / 1000) * rateLimit);
    const admitted = tokens >= 1;
    this.#buckets.set(routeKey, { tokens: admitted ? tokens - 1 : tokens, at: now });
    return admitted;
  }
}
