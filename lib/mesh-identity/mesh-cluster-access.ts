import type { KubeConfig } from '@kubernetes/client-node';
import { eksKubeConfig, kubeConfigFromFile } from '../projection/cluster-access.ts';
import { PROJECTOR_ENV } from '../projection/projector-config.ts';

/** An EKS bearer token is accepted for 15 minutes; a new one is signed well before. */
const EKS_TOKEN_REUSE_MS = 10 * 60_000;

/**
 * The cluster the mesh function mints in: the projector's (the same variables: a kubeconfig
 * file, or the EKS cluster's name, endpoint and CA), under the function's own role, which an
 * EKS access entry maps to its own Kubernetes group (RBAC in docs/kubernetes.md). Undefined
 * when no cluster is configured: the sidecar bootstrap is then unavailable.
 */
export function meshKubeConfig(
  env: Record<string, string | undefined>,
  region: string,
  now: () => number = Date.now,
): (() => Promise<KubeConfig>) | undefined {
  const file = env[PROJECTOR_ENV.kubeconfig];
  if (file) {
    const config = kubeConfigFromFile(file);
    return async () => config;
  }
  const clusterName = env[PROJECTOR_ENV.clusterName];
  const endpoint = env[PROJECTOR_ENV.endpoint];
  const certificateAuthority = env[PROJECTOR_ENV.certificateAuthority];
  if (!clusterName || !endpoint || !certificateAuthority) return undefined;
  let signed: { config: Promise<KubeConfig>; at: number } | undefined;
  return () => {
    if (!signed || now() - signed.at > EKS_TOKEN_REUSE_MS) {
      const config = eksKubeConfig({ clusterName, endpoint, certificateAuthority, region });
      // A failed signing is not kept: the next request signs again.
      config.catch(() => {
        signed = undefined;
      });
      signed = { config, at: now() };
    }
    return signed.config;
  };
}
