import type { ApiIdentity } from './gateway-events.ts';
import {
  API_GATEWAY_LIMITS,
  type GatewayHandlers,
  type GatewayLimits,
  type GatewayLog,
  type GatewayOptions,
} from './gateway-options.ts';

/** The gateway's options with every default filled in, as each part of it reads them. */
export interface GatewaySettings {
  readonly handlers: GatewayHandlers;
  readonly limits: GatewayLimits;
  readonly api: ApiIdentity;
  readonly identitySource: readonly string[];
  /** The gateway's clock (connectedAt, requestTimeEpoch). */
  readonly now: () => number;
  readonly log: GatewayLog;
}

export function resolveGatewaySettings(options: GatewayOptions): GatewaySettings {
  return {
    handlers: options.handlers,
    limits: { ...API_GATEWAY_LIMITS, ...options.limits },
    api: { apiId: 'local', stage: 'local', region: 'us-east-1', ...options.api },
    identitySource: options.identitySource ?? [],
    now: options.now ?? Date.now,
    log: options.log ?? (() => {}),
  };
}
