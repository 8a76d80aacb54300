import type { Dependencies } from '../dependencies.ts';
import { registryStore } from './registry-store.ts';
import { now, tableWiring } from './table.ts';

/** Agent messages (health, describe, drain): the registry only. */
export type MessageDependencies = Pick<Dependencies, 'store' | 'now'>;

export function messageDependencies(env: Record<string, string | undefined>): MessageDependencies {
  const { config, client } = tableWiring(env);
  return { store: registryStore(client, config.tableName), now };
}
