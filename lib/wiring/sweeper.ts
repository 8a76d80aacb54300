import type { Dependencies } from '../function-dependencies.ts';
import { registryMigrations } from '../store/dynamodb-migrations.ts';
import { DynamoDbSchemaStore } from '../store/dynamodb-schema-store.ts';
import { DynamoDbSweepPolicyStore } from '../store/dynamodb-sweep-policy-store.ts';
import { DynamoDbSweepRuns } from '../store/dynamodb-sweep-runs.ts';
import { DynamoDbSweeperStore, type SweeperStore } from '../store/dynamodb-sweeper-store.ts';
import { livenessOf } from './disconnect.ts';
import { reportHistoryLost } from './history-lost.ts';
import { closerOf } from './message.ts';
import { now, tableWiring } from './table.ts';

/**
 * The sweeper: the registry, API Gateway's word on holders, where it records its policy and
 * runs, the table's schema record and this code's migrations. No tokens, rules, certificates
 * or namespace limits: those are `$connect`'s.
 */
export type SweeperDependencies = Pick<
  Dependencies,
  | 'config'
  | 'liveness'
  | 'closeConnection'
  | 'sweepPolicy'
  | 'sweepRuns'
  | 'schema'
  | 'migrations'
  | 'now'
> & {
  /** Only what a sweep calls (lib/store/dynamodb-sweeper-store.ts). */
  store: SweeperStore;
};

export function sweeperDependencies(
  env: Record<string, string | undefined>,
  table = tableWiring(env),
): SweeperDependencies {
  const { config, client } = table;
  return {
    config,
    store: new DynamoDbSweeperStore(client, config.tableName, { onHistoryLost: reportHistoryLost }),
    sweepPolicy: new DynamoDbSweepPolicyStore(client, config.tableName),
    sweepRuns: new DynamoDbSweepRuns(client, config.tableName, config.sweep.sweepIntervalMs),
    schema: new DynamoDbSchemaStore(client, config.tableName),
    migrations: registryMigrations(client, config.tableName),
    ...livenessOf(config),
    // Connections silent past their heartbeat are closed (sweep-heartbeat.ts).
    ...closerOf(config),
    now,
  };
}
