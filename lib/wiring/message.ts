import type { Config } from '../config.ts';
import type { Dependencies } from '../function-dependencies.ts';
import { connectionCloser } from '../gateway/close-connections.ts';
import { registryStore } from './registry-store.ts';
import { now, tableWiring } from './table.ts';

/**
 * Agent messages (health, describe, drain): the registry, and API Gateway's management API to
 * close a connection over its message budget.
 */
export type MessageDependencies = Pick<Dependencies, 'store' | 'closeConnection' | 'now'>;

export function messageDependencies(env: Record<string, string | undefined>): MessageDependencies {
  const { config, client } = tableWiring(env);
  return { store: registryStore(client, config.tableName), ...closerOf(config), now };
}

/**
 * `DELETE @connections/{id}` when the stack names its management endpoint: a signed request
 * (lib/gateway/close-connections.ts), built at the first close (most invocations close
 * nothing). A failure is thrown to the caller, which logs it.
 */
export function closerOf(config: Config): Pick<Dependencies, 'closeConnection'> {
  const endpoint = config.connectionsUrl;
  if (endpoint === undefined) return { closeConnection: undefined };
  let closer: ReturnType<typeof connectionCloser> | undefined;
  return {
    closeConnection: async (connectionId) => {
      closer ??= connectionCloser({ endpoint, region: config.region });
      return closer.close(connectionId);
    },
  };
}
