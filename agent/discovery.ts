import type { AgentConfig } from './config.ts';
import {
  discoverInstance,
  ImdsUnavailableError,
  type InstanceIdentity,
  localityOf,
} from './imds.ts';
import type { Logger } from './logger.ts';

/**
 * Connect label that carries the EC2 instance ID read from IMDS, so the registrar can remove
 * the entry as soon as EC2 reports the instance shutting down or terminated (in token mode it
 * may only ever speed up the removal of the entry that claims it). Sent only when IMDS
 * answered: with `--no-imds` the agent does not know its instance.
 */
export const INSTANCE_ID_LABEL = 'registrar.io/instance-id';

export interface Discovered {
  ips: string[];
  locality?: string;
  labels: Record<string, string>;
  region?: string;
}

export class DiscoveryError extends Error {}

/**
 * Address, locality and instance ID: flags win over IMDS. IMDS is asked unless disabled;
 * off EC2 it fails fast (short timeout), which is fatal only when no --ip was given.
 */
export async function discover(
  config: AgentConfig,
  logger: Logger,
  lookup: (options: {
    baseUrl: string;
    timeoutMs: number;
  }) => Promise<InstanceIdentity> = discoverInstance,
): Promise<Discovered> {
  let identity: InstanceIdentity | undefined;
  if (config.imds.enabled) {
    try {
      identity = await lookup({ baseUrl: config.imds.url, timeoutMs: config.imds.timeoutMs });
    } catch (error) {
      if (config.ips.length === 0) {
        const hint =
          error instanceof ImdsUnavailableError
            ? 'not running on EC2? pass --ip <address> (and --locality <region/zone>) to run elsewhere'
            : 'pass --ip <address> to skip discovery';
        throw new DiscoveryError(
          `cannot discover this VM's address: ${(error as Error).message}; ${hint}`,
        );
      }
      logger.info('instance metadata not available; using the configured address', {
        reason: (error as Error).message,
      });
    }
  }
  const discoveredIps = identity
    ? [identity.ipv4, identity.ipv6].filter((ip): ip is string => ip !== undefined)
    : [];
  const ips = config.ips.length > 0 ? config.ips : discoveredIps;
  if (ips.length === 0) {
    throw new DiscoveryError(
      'no address to register: the instance reports no private IP; pass --ip <address>',
    );
  }
  const locality = config.locality ?? (identity ? localityOf(identity) : undefined);
  // IMDS wins over a configured label of the same key: the instance ID is a fact, not a choice.
  const labels = {
    ...config.labels,
    ...(identity ? { [INSTANCE_ID_LABEL]: identity.instanceId } : {}),
  };
  return {
    ips,
    labels,
    ...(locality ? { locality } : {}),
    ...(identity ? { region: identity.region } : {}),
  };
}
