import type { InstanceAttestation } from '../auth/instance-attestation.ts';
import { loadTrustedCertificates } from '../auth/instance-identity-document.ts';
import { type Config, ConfigError, ENV } from '../config.ts';
import type { Dependencies } from '../function-dependencies.ts';
import { NamespaceLimits } from '../registration/namespace-limits.ts';
import type { RegisterWorkloadStore } from '../registration/register-workload.ts';
import { DynamoDbConnectRate } from '../store/dynamodb-connect-rate.ts';
import { DynamoDbNamespaceSettings } from '../store/dynamodb-namespace-settings.ts';
import { DynamoDbNamespaceUsage } from '../store/dynamodb-namespace-usage.ts';
import { DynamoDbPolicyStore } from '../store/dynamodb-policy-store.ts';
import { RegistryTable } from '../store/dynamodb-table.ts';
import { DynamoDbTerminatedInstances } from '../store/dynamodb-terminated-instances.ts';
import { connectStore } from './connect-store.ts';
import { reportHistoryLost } from './history-lost.ts';
import { now, tableWiring } from './table.ts';

/** `$connect`: the registry, IAM mode's policies and attestation, the namespace limits. */
export type ConnectDependencies = Pick<
  Dependencies,
  | 'config'
  | 'policies'
  | 'attestation'
  | 'terminatedInstances'
  | 'limits'
  | 'namespaceSettings'
  | 'now'
> & {
  /** Only what a connect calls (lib/wiring/connect-store.ts). */
  store: RegisterWorkloadStore;
};

export function connectDependencies(
  env: Record<string, string | undefined>,
  table = tableWiring(env),
): ConnectDependencies {
  const { config, client } = table;
  const namespaceSettings = new DynamoDbNamespaceSettings(client, config.tableName);
  return {
    config,
    store: connectStore(client, config.tableName, { onHistoryLost: reportHistoryLost }),
    policies: new DynamoDbPolicyStore(client, config.tableName),
    // Token mode verifies no instance document and remembers no terminated instance.
    ...(config.authMode === 'iam'
      ? {
          attestation: attestationOf(config),
          terminatedInstances: new DynamoDbTerminatedInstances(
            new RegistryTable(client, config.tableName),
          ),
        }
      : { attestation: undefined, terminatedInstances: undefined }),
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
