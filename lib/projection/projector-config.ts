import * as z from 'zod';
import { ConfigError } from '../config.ts';
import { TARGETS, type Target } from './report.ts';

/** Where the cluster is and what to write there, read once from the environment. */
export interface ProjectorConfig {
  targets: Target[];
  cluster:
    | { kind: 'eks'; clusterName: string; endpoint: string; certificateAuthority: string }
    | { kind: 'kubeconfig'; path: string };
}

export const PROJECTOR_ENV = {
  targets: 'REGISTRAR_PROJECTION_TARGETS',
  clusterName: 'REGISTRAR_EKS_CLUSTER_NAME',
  endpoint: 'REGISTRAR_EKS_ENDPOINT',
  certificateAuthority: 'REGISTRAR_EKS_CA',
  kubeconfig: 'REGISTRAR_KUBECONFIG',
} as const;

/** `istio,linkerd` -> ['istio', 'linkerd']; an unknown or empty list is an error. */
export function parseTargets(text: string): Target[] {
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(TARGETS as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0) {
    throw new ConfigError(
      `invalid projection targets '${text}': use a comma-separated list of ${TARGETS.join(', ')}`,
    );
  }
  return [...new Set(names)] as Target[];
}

const eks = z.object({
  [PROJECTOR_ENV.clusterName]: z
    .string()
    .regex(/^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/, 'must be an EKS cluster name'),
  [PROJECTOR_ENV.endpoint]: z.url({
    protocol: /^https$/,
    message: 'must be the https:// endpoint of the cluster',
  }),
  [PROJECTOR_ENV.certificateAuthority]: z.base64(
    'must be the base64 certificate authority data EKS reports',
  ),
});

/** Throws ConfigError naming the variable and the value. */
export function readProjectorConfig(env: Record<string, string | undefined>): ProjectorConfig {
  const targets = parseTargets(env[PROJECTOR_ENV.targets] ?? '');
  const kubeconfig = env[PROJECTOR_ENV.kubeconfig];
  if (kubeconfig) return { targets, cluster: { kind: 'kubeconfig', path: kubeconfig } };
  const parsed = eks.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0]);
      const value = env[variable];
      return `${variable}${value === undefined ? '' : ` (value '${value}')`}: ${issue.message}`;
    });
    throw new ConfigError(`invalid projector configuration: ${problems.join('; ')}`);
  }
  return {
    targets,
    cluster: {
      kind: 'eks',
      clusterName: parsed.data[PROJECTOR_ENV.clusterName],
      endpoint: parsed.data[PROJECTOR_ENV.endpoint],
      certificateAuthority: parsed.data[PROJECTOR_ENV.certificateAuthority],
    },
  };
}
