import { describe, expect, it } from 'vitest';
import { RouteBuckets } from '../../infra/local/route-buckets.ts';
import { DEFAULT_FLEET_SIZE, routeThrottle } from '../../infra/route-throttle.ts';

/** The local gateway's stage throttle: a token bucket per route, shared by every connection. */
describe('route buckets', () => {
  function buckets(rateLimit: number, burstLimit: number) {
    let now = 0;
    const routes = new RouteBuckets({ rateLimit, burstLimit }, () => now);
    return { routes, advance: (ms: number) => (now += ms) };
  }
  const takes = (routes: RouteBuckets, route: string, n: number) =>
    Array.from({ length: n }, () => routes.take(route)).filter(Boolean).length;

  it('lets a burst through, then throttles until the rate refills the bucket', () => {
    const { routes, advance } = buckets(10, 5);
    expect(takes(routes, 'ping', 8)).toBe(5);
    advance(100); // 10/s: one token
    expect(takes(routes, 'ping', 3)).toBe(1);
    advance(10_000); // never more than the burst
    expect(takes(routes, 'ping', 8)).toBe(5);
  });

  it('keeps one bucket per route: a flooded ping route does not throttle health', () => {
    const { routes } = buckets(10, 5);
    expect(takes(routes, 'ping', 50)).toBe(5);
    expect(takes(routes, 'health', 5)).toBe(5);
  });

  it("starts `npm start` with the stack's throttle for its default fleet", () => {
    expect(routeThrottle(DEFAULT_FLEET_SIZE)).toEqual({ rateLimit: 1576, burstLimit: 3152 });
  });
});
