import { FunctionConcurrency } from './function-concurrency.ts';
import type { ApiIdentity } from './gateway-events.ts';
import {
  API_GATEWAY_LIMITS,
  type GatewayHandlers,
  type GatewayLimits,
  type GatewayLog,
  type GatewayOptions,
} from './gateway-options.ts';
import { RouteBuckets } from './route-buckets.ts';
import { SigV4Verifier } from './sigv4-verifier.ts';

/** The gateway's options with every default filled in, as each part of it reads them. */
export interface GatewaySettings {
  readonly handlers: GatewayHandlers;
  readonly limits: GatewayLimits;
  readonly api: ApiIdentity;
  readonly identitySource: readonly string[];
  /** Set when $connect uses IAM authorization. */
  readonly sigv4: SigV4Verifier | undefined;
  /** The stage's route throttle over messages; unset, nothing is throttled. */
  readonly throttle: RouteBuckets | undefined;
  /** Each function's concurrency limit; unset, every invocation starts at once. */
  readonly concurrency: FunctionConcurrency | undefined;
  /** The gateway's clock (connectedAt, requestTimeEpoch). */
  readonly now: () => number;
  readonly log: GatewayLog;
}

export function resolveGatewaySettings(options: GatewayOptions): GatewaySettings {
  const api = { apiId: 'local', stage: 'local', region: 'us-east-1', ...options.api };
  const now = options.now ?? Date.now;
  const iam = options.iamAuthorization;
  if (iam && options.handlers.authorize) {
    // A route has one authorization type on API Gateway: AWS_IAM or CUSTOM, never both.
    throw new Error('$connect cannot have both IAM authorization and a Lambda authorizer');
  }
  return {
    handlers: options.handlers,
    limits: { ...API_GATEWAY_LIMITS, ...options.limits },
    api,
    identitySource: options.identitySource ?? [],
    sigv4: iam ? new SigV4Verifier({ callers: iam.callers, region: api.region, now }) : undefined,
    throttle: options.routeThrottle ? new RouteBuckets(options.routeThrottle, now) : undefined,
    concurrency:
      options.functionConcurrency === undefined
        ? undefined
        : new FunctionConcurrency(options.functionConcurrency),
    now,
    log: options.log ?? (() => {}),
  };
}
