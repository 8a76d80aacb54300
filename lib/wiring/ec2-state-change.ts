import type { Dependencies } from '../function-dependencies.ts';
import { RegistryTable } from '../store/dynamodb-table.ts';
import { DynamoDbTerminatedInstances } from '../store/dynamodb-terminated-instances.ts';
import { registryStore } from './registry-store.ts';
import { now, tableWiring } from './table.ts';

/** EC2's state changes: the registry, and in IAM mode the instances EC2 reported gone. */
export type Ec2StateChangeDependencies = Pick<
  Dependencies,
  'config' | 'store' | 'terminatedInstances' | 'now'
>;

export function ec2StateChangeDependencies(
  env: Record<string, string | undefined>,
): Ec2StateChangeDependencies {
  const { config, client } = tableWiring(env);
  return {
    config,
    store: registryStore(client, config.tableName),
    // Token mode remembers no terminated instance: nothing it accepts is tied to one.
    terminatedInstances:
      config.authMode === 'iam'
        ? new DynamoDbTerminatedInstances(new RegistryTable(client, config.tableName))
        : undefined,
    now,
  };
}
