import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { KubeConfig } from '@kubernetes/client-node';
import type { AwsCredentialIdentity, Provider } from '@smithy/types';
import type { Cluster } from './cluster.ts';
import { createEksToken } from './eks-token.ts';
import { resolveKubeConfig } from './kubeconfig.ts';
import { createKubernetesCluster } from './kubernetes-cluster.ts';
import type { ProjectorConfig } from './projector-config.ts';

/**
 * A kubeconfig file, as kubectl reads it (current context unless one is named); a missing
 * file or context is a KubeconfigError that says which (kubeconfig.ts).
 */
export function kubeConfigFromFile(path: string, context?: string): KubeConfig {
  return resolveKubeConfig({ kubeconfig: path, ...(context ? { context } : {}) }).config;
}

export interface EksAccess {
  clusterName: string;
  endpoint: string;
  /** Base64 PEM, as `aws eks describe-cluster` reports `certificateAuthority.data`. */
  certificateAuthority: string;
  region: string;
  credentials?: AwsCredentialIdentity | Provider<AwsCredentialIdentity>;
}

/**
 * A kubeconfig for an EKS cluster with a freshly signed bearer token. EKS accepts a token for
 * 15 minutes, so callers build one per reconcile (signing is local: no network, no kubectl).
 */
export async function eksKubeConfig(access: EksAccess): Promise<KubeConfig> {
  const token = await createEksToken({
    clusterName: access.clusterName,
    region: access.region,
    credentials: access.credentials ?? defaultProvider(),
  });
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [
      {
        name: access.clusterName,
        server: access.endpoint,
        caData: access.certificateAuthority,
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'workload-registrar', token }],
    contexts: [{ name: 'projector', cluster: access.clusterName, user: 'workload-registrar' }],
    currentContext: 'projector',
  });
  return config;
}

/** The cluster the configuration names, connected anew (a fresh token on EKS). */
export async function connectCluster(config: ProjectorConfig, region: string): Promise<Cluster> {
  if (config.cluster.kind === 'kubeconfig')
    return createKubernetesCluster(kubeConfigFromFile(config.cluster.path));
  return createKubernetesCluster(await eksKubeConfig({ ...config.cluster, region }));
}
