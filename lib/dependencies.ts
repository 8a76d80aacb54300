import type { Context } from 'aws-lambda';
import type { InstanceAttestation } from './auth/instance-attestation.ts';
import { loadTrustedCertificates } from './auth/instance-identity-document.ts';
import type { TerminatedInstances } from './auth/terminated-instances.ts';
import { type Config, ConfigError, ENV, readConfig } from './config.ts';
import type { EpochMillis } from './domain/model.ts';
import { ManagementApiDisconnect } from './gateway/management-api-disconnect.ts';
import { ManagementApiLiveness } from './gateway/management-api-liveness.ts';
import { countFault, logger } from './observability.ts';
import type { ConnectionCloser } from './protocol/message-budget-guard.ts';
import type { ConnectionLiveness } from './registration/liveness.ts';
import { NamespaceLimits } from './registration/namespace-limits.ts';
import type { Migration, SchemaStore } from './registration/run-migrations.ts';
import { createDocumentClient } from './store/dynamodb-client.ts';
import { DynamoDbConnectRate } from './store/dynamodb-connect-rate.ts';
import { registryMigrations } from './store/dynamodb-migrations.ts';
import { DynamoDbNamespaceSettings } from './store/dynamodb-namespace-settings.ts';
import { DynamoDbNamespaceUsage } from './store/dynamodb-namespace-usage.ts';
import { DynamoDbPolicyStore } from './store/dynamodb-policy-store.ts';
import { DynamoDbRegistryStore } from './store/dynamodb-registry-store.ts';
import { DynamoDbSchemaStore } from './store/dynamodb-schema-store.ts';
import {
  DynamoDbSweepPolicyStore,
  type SweepPolicyStore,
} from './store/dynamodb-sweep-policy-store.ts';
import { DynamoDbSweepRuns, type SweepRunStore } from './store/dynamodb-sweep-runs.ts';
import { RegistryTable } from './store/dynamodb-table.ts';
import { DynamoDbTerminatedInstances } from './store/dynamodb-terminated-instances.ts';
import { DynamoDbTokenStore } from './store/dynamodb-token-store.ts';
import type { NamespaceSettingsStore } from './store/namespace-settings-store.ts';
import type { PolicyReader } from './store/policy-store.ts';
import type { CatalogStore, RegistryStore } from './store/registry-store.ts';
import type { TokenStore } from './store/token-store.ts';

/**
 * What a function needs from the outside world, passed in explicitly so that tests and the
 * local runtime build handlers over dynalite and a fixed clock, and Lambda over DynamoDB.
 */
export interface Dependencies {
  config: Config;
  store: RegistryStore & CatalogStore;
  tokens: TokenStore;
  /** IAM mode's allow rules (role -> namespace), read on connect; absent, none is allowed. */
  policies?: PolicyReader;
  /**
   * IAM mode's instance attestation (mode and trusted certificates); absent, a connect with a
   * document is refused (nothing to verify it against) and one without is accepted.
   */
  attestation?: InstanceAttestation;
  /**
   * IAM mode: instances EC2 reported terminated, whose credentials and documents connect
   * refuses (lib/auth/terminated-instances.ts); absent, none is remembered.
   */
  terminatedInstances?: TerminatedInstances;
  /** API Gateway's word on whether a connection still exists; absent, no liveness checks. */
  liveness?: ConnectionLiveness;
  /** Where the effective sweep policy is recorded for every client to read. */
  sweepPolicy?: SweepPolicyStore;
  /** Where the sweeper keeps a summary of its recent runs (registrar dashboard's chart). */
  sweepRuns?: SweepRunStore;
  /** Each namespace's quotas, networks and address ranges, as $connect enforces them. */
  limits?: NamespaceLimits;
  /** The namespaces' settings as stored (the projector reads their address ranges). */
  namespaceSettings?: NamespaceSettingsStore;
  /**
   * The table's schema record and this code's migrations: the sweeper refuses a table this
   * code cannot read and runs pending migrations in its spare time. Absent: neither.
   */
  schema?: SchemaStore;
  migrations?: readonly Migration[];
  /**
   * Closes a connection from the server side: the message function closes one over its
   * message budget (lib/domain/message-budget.ts). Absent, such a connection is only refused.
   */
  closeConnection?: ConnectionCloser;
  now: () => EpochMillis;
}

/** A function's handler as Lambda, the local runtime and tests call it. */
export type FunctionHandler<TEvent, TResult> = (
  event: TEvent,
  context: Context,
) => Promise<TResult>;

/** The Lambda wiring: configuration from the environment, the DynamoDB adapter, real time. */
export function dependenciesFromEnv(env: Record<string, string | undefined>): Dependencies {
  const config = readConfig(env);
  const client = createDocumentClient({
    region: config.region,
    ...(config.dynamoDbEndpoint === undefined ? {} : { endpoint: config.dynamoDbEndpoint }),
  });
  const namespaceSettings = new DynamoDbNamespaceSettings(client, config.tableName);
  return {
    config,
    store: new DynamoDbRegistryStore(client, config.tableName, {
      onHistoryLost: (ref, deletion, error) => {
        logger.warn('the deletion of an entry was not recorded in its history', {
          entry: `${ref.namespace}/${ref.name}`,
          reason: deletion.reason,
          cause: error instanceof Error ? error.message : String(error),
        });
        countFault('HistoryNotRecorded');
      },
    }),
    tokens: new DynamoDbTokenStore(client, config.tableName),
    policies: new DynamoDbPolicyStore(client, config.tableName),
    ...(config.authMode === 'iam'
      ? {
          attestation: attestationOf(config),
          terminatedInstances: new DynamoDbTerminatedInstances(
            new RegistryTable(client, config.tableName),
          ),
        }
      : {}),
    sweepPolicy: new DynamoDbSweepPolicyStore(client, config.tableName),
    sweepRuns: new DynamoDbSweepRuns(client, config.tableName, config.sweep.sweepIntervalMs),
    namespaceSettings,
    limits: new NamespaceLimits({
      settings: namespaceSettings,
      usage: new DynamoDbNamespaceUsage(client, config.tableName),
      rate: new DynamoDbConnectRate(client, config.tableName),
      settingsCacheMs: config.namespaceSettingsCacheMs,
    }),
    schema: new DynamoDbSchemaStore(client, config.tableName),
    migrations: registryMigrations(client, config.tableName),
    ...(config.connectionsUrl === undefined
      ? {}
      : {
          liveness: new ManagementApiLiveness({
            endpoint: config.connectionsUrl,
            region: config.region,
            // Only a local gateway speaks plain HTTP; it checks no signature.
            local: config.connectionsUrl.startsWith('http:'),
          }),
          closeConnection: closerOf(config.connectionsUrl, config.region),
        }),
    now: () => Date.now(),
  };
}

/**
 * `DELETE @connections/{id}` through the management API, built at the first close (most
 * invocations never close anything). A failure is thrown to the caller, which logs it.
 */
function closerOf(endpoint: string, region: string): ConnectionCloser {
  let closer: ManagementApiDisconnect | undefined;
  return async (connectionId) => {
    closer ??= new ManagementApiDisconnect({ endpoint, region });
    const answer = await closer.close(connectionId);
    if (typeof answer === 'object') throw new Error(answer.failed);
    return answer;
  };
}

/**
 * Reads the trusted certificates once, at start: a bad file or PEM names the variable, an
 * unknown Region or a certificate that is not its pinned one names the Region.
 */
function attestationOf(config: Config): InstanceAttestation {
  try {
    return {
      mode: config.instanceAttestation,
      trusted: loadTrustedCertificates(config.instanceIdentityCerts, ENV.instanceIdentityCerts, {
        names: config.instanceIdentityRegions,
        source: ENV.instanceIdentityRegions,
      }),
    };
  } catch (error) {
    throw new ConfigError(`invalid configuration: ${(error as Error).message}`);
  }
}

/**
 * The Lambda entry point for a handler factory. Dependencies are built on the first
 * invocation, not at import: importing a function file (tests, the local runtime, esbuild
 * analysis) never reads the environment or throws on a missing variable, and a bad
 * configuration fails the invocation with the variable's name in the log.
 */
export function lazyHandler<TEvent, TResult>(
  create: (deps: Dependencies) => FunctionHandler<TEvent, TResult>,
): FunctionHandler<TEvent, TResult> {
  let handler: FunctionHandler<TEvent, TResult> | undefined;
  // async: a configuration error becomes a rejected invocation, like any other failure.
  return async (event, context) => {
    handler ??= create(dependenciesFromEnv(process.env));
    return handler(event, context);
  };
}
