import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { InstanceAttestation } from './auth/instance-attestation.ts';
import { loadTrustedCertificates } from './auth/instance-identity-document.ts';
import { type Config, ConfigError, ENV, readConfig } from './config.ts';
import type { Dependencies } from './dependencies.ts';
import { ManagementApiLiveness } from './gateway/management-api-liveness.ts';
import { NamespaceLimits } from './registration/namespace-limits.ts';
import { createDocumentClient } from './store/dynamodb-client.ts';
import { DynamoDbConnectRate } from './store/dynamodb-connect-rate.ts';
import { DynamoDbNamespaceSettings } from './store/dynamodb-namespace-settings.ts';
import { DynamoDbNamespaceUsage } from './store/dynamodb-namespace-usage.ts';
import { DynamoDbPolicyStore } from './store/dynamodb-policy-store.ts';
import { DynamoDbRegistryStore } from './store/dynamodb-registry-store.ts';
import { RegistryTable } from './store/dynamodb-table.ts';
import { DynamoDbTerminatedInstances } from './store/dynamodb-terminated-instances.ts';
import { DynamoDbTokenStore } from './store/dynamodb-token-store.ts';

/**
 * What each WebSocket function is given, and how Lambda builds exactly that from the
 * environment. A function's bundle holds only the code its wiring names (issue 27): the
 * authorizer reads tokens and nothing else, so it carries no registry store, no management
 * API client and no certificates; only `$connect` in IAM mode loads certificates.
 */
export type AuthorizeDependencies = Pick<Dependencies, 'tokens' | 'now'>;
export type ConnectDependencies = Pick<
  Dependencies,
  | 'config'
  | 'store'
  | 'policies'
  | 'attestation'
  | 'terminatedInstances'
  | 'limits'
  | 'namespaceSettings'
  | 'now'
>;
export type DisconnectDependencies = Pick<Dependencies, 'config' | 'store' | 'liveness' | 'now'>;
export type MessageDependencies = Pick<Dependencies, 'store' | 'now'>;

/** The configuration and one document client over the table: what every wiring starts from. */
export interface TableWiring {
  config: Config;
  client: DynamoDBDocumentClient;
}

export function tableWiring(env: Record<string, string | undefined>): TableWiring {
  const config = readConfig(env);
  const client = createDocumentClient({
    region: config.region,
    ...(config.dynamoDbEndpoint === undefined ? {} : { endpoint: config.dynamoDbEndpoint }),
  });
  return { config, client };
}

const now = () => Date.now();

export function authorizeDependencies(
  env: Record<string, string | undefined>,
): AuthorizeDependencies {
  const { config, client } = tableWiring(env);
  return { tokens: new DynamoDbTokenStore(client, config.tableName), now };
}

export function connectDependencies(
  env: Record<string, string | undefined>,
  table = tableWiring(env),
): ConnectDependencies {
  const { config, client } = table;
  const namespaceSettings = new DynamoDbNamespaceSettings(client, config.tableName);
  return {
    config,
    store: new DynamoDbRegistryStore(client, config.tableName),
    policies: new DynamoDbPolicyStore(client, config.tableName),
    ...(config.authMode === 'iam'
      ? {
          attestation: attestationOf(config),
          terminatedInstances: new DynamoDbTerminatedInstances(
            new RegistryTable(client, config.tableName),
          ),
        }
      : {}),
    namespaceSettings,
    limits: new NamespaceLimits({
      settings: namespaceSettings,
      usage: new DynamoDbNamespaceUsage(client, config.tableName),
      rate: new DynamoDbConnectRate(client, config.tableName),
      settingsCacheMs: config.namespaceSettingsCacheMs,
    }),
    now,
  };
}

export function disconnectDependencies(
  env: Record<string, string | undefined>,
): DisconnectDependencies {
  const { config, client } = tableWiring(env);
  return {
    config,
    store: new DynamoDbRegistryStore(client, config.tableName),
    ...livenessOf(config),
    now,
  };
}

export function messageDependencies(env: Record<string, string | undefined>): MessageDependencies {
  const { config, client } = tableWiring(env);
  return { store: new DynamoDbRegistryStore(client, config.tableName), now };
}

/** API Gateway's word on a connection, when the stack names its management endpoint. */
export function livenessOf(config: Config): Pick<Dependencies, 'liveness'> {
  if (config.connectionsUrl === undefined) return {};
  return {
    liveness: new ManagementApiLiveness({
      endpoint: config.connectionsUrl,
      region: config.region,
      // Only a local gateway speaks plain HTTP; it checks no signature.
      local: config.connectionsUrl.startsWith('http:'),
    }),
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
