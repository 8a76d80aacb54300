import type { Config } from '../config.ts';
import type { Dependencies } from '../function-dependencies.ts';
import { ManagementApiLiveness } from '../gateway/management-api-liveness.ts';
import { registryStore } from './registry-store.ts';
import { now, tableWiring } from './table.ts';

/** `$disconnect`: the registry, and API Gateway's word on the entry's other holders. */
export type DisconnectDependencies = Pick<Dependencies, 'config' | 'store' | 'liveness' | 'now'>;

export function disconnectDependencies(
  env: Record<string, string | undefined>,
): DisconnectDependencies {
  const { config, client } = tableWiring(env);
  return {
    config,
    store: registryStore(client, config.tableName),
    ...livenessOf(config),
    now,
  };
}

/** API Gateway's word on a connection, when the stack names its management endpoint. */
export function livenessOf(config: Config): Pick<Dependencies, 'liveness'> {
  if (config.connectionsUrl === undefined) return { liveness: undefined };
  return {
    liveness: new ManagementApiLiveness({
      endpoint: config.connectionsUrl,
      region: config.region,
      // Only a local gateway speaks plain HTTP; it checks no signature.
      local: config.connectionsUrl.startsWith('http:'),
    }),
  };
}
