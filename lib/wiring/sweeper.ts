import type { Config } from '../config.ts';
import type { Dependencies } from '../function-dependencies.ts';
import { connectionNotifier } from '../gateway/connection-notifier.ts';
import { registryMigrations } from '../store/dynamodb-migrations.ts';
import { DynamoDbSchemaStore } from '../store/dynamodb-schema-store.ts';
import { DynamoDbSweepPolicyStore } from '../store/dynamodb-sweep-policy-store.ts';
import { DynamoDbSweepRuns } from '../store/dynamodb-sweep-runs.ts';
import { livenessOf } from './disconnect.ts';
import { reportHistoryLost } from './history-lost.ts';
import { closerOf } from './message.ts';
import { type SweeperStore, sweeperStore } from './sweeper-store.ts';
import { now, tableWiring } from './table.ts';

/**
 * `POST @connections/{id}` when the stack names its management endpoint, built at the first
 * notice (most runs send none).
 */
export function notifierOf(config: Config): Pick<SweeperDependencies, 'notifyConnection'> {
  const endpoint = config.connectionsUrl;
  if (endpoint === undefined) return { notifyConnection: undefined };
  let notifier: ReturnType<typeof connectionNotifier> | undefined;
  return {
    notifyConnection: (connectionId, message) => {
      notifier ??= connectionNotifier({ endpoint, region: config.region });
      return notifier.post(connectionId, message);
    },
  };
}

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
  | 'notifyConnection'
  | 'sweepPolicy'
  | 'sweepRuns'
  | 'schema'
  | 'migrations'
  | 'now'
> & {
  /** Only what a sweep calls (lib/wiring/sweeper-store.ts). */
  store: SweeperStore;
};

export function sweeperDependencies(
  env: Record<string, string | undefined>,
  table = tableWiring(env),
): SweeperDependencies {
  const { config, client } = table;
  return {
    config,
    store: sweeperStore(client, config.tableName, { onHistoryLost: reportHistoryLost }),
    sweepPolicy: new DynamoDbSweepPolicyStore(client, config.tableName),
    sweepRuns: new DynamoDbSweepRuns(client, config.tableName, config.sweep.sweepIntervalMs),
    schema: new DynamoDbSchemaStore(client, config.tableName),
    migrations: registryMigrations(client, config.tableName),
    ...livenessOf(config),
    // Connections silent past their heartbeat are closed (sweep-heartbeat.ts).
    ...closerOf(config),
    // Live agents are told their group's changed heartbeat (issue 44).
    ...notifierOf(config),
    now,
  };
}
