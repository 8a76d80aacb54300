import type { Dependencies } from './function-dependencies.ts';
import type { StoreTransport } from './store/dynamodb-client.ts';
import { DynamoDbTokenStore } from './store/dynamodb-token-store.ts';
import { connectDependencies } from './wiring/connect.ts';
import { closerOf } from './wiring/message.ts';
import { registryStore } from './wiring/registry-store.ts';
import { sweeperDependencies } from './wiring/sweeper.ts';
import { tableWiring } from './wiring/table.ts';

export type { Dependencies, FunctionHandler } from './function-dependencies.ts';

/**
 * Everything every function could use: the local runtime's wiring, and that of a function
 * that declares no narrower one. The WebSocket functions build only their own part
 * (lib/wiring/), so their bundles leave the rest out.
 */
export function dependenciesFromEnv(
  env: Record<string, string | undefined>,
  transport: StoreTransport = {},
): Dependencies {
  const table = tableWiring(env, transport);
  const { config, client } = table;
  return {
    ...connectDependencies(env, table),
    ...sweeperDependencies(env, table),
    // The whole registry, shared by every route (the parts above build narrower ones).
    store: registryStore(client, config.tableName),
    tokens: new DynamoDbTokenStore(client, config.tableName),
    ...closerOf(config),
  };
}
