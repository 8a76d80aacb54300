import * as z from 'zod';
import { ConfigError } from '../config.ts';
import { type Cidr, parseCidrList } from '../domain/cidr.ts';
import { TARGETS, type Target } from './report.ts';

/** Where the cluster is and what to write there, read once from the environment. */
export interface ProjectorConfig {
  targets: Target[];
  /** The cluster's pod and Service ranges: the projector writes no endpoint in them. */
  clusterRanges: Cidr[];
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
  clusterRanges: 'REGISTRAR_CLUSTER_RANGES',
} as const;

/**
 * `10.100.0.0/16,192.168.0.0/16`: the cluster's Service and pod ranges (docs/kubernetes.md
 * says how to find them). Empty: none. A bad item is an error naming `source` and the item.
 */
export function parseClusterRanges(text: string, source: string): Cidr[] {
  const parsed = parseCidrList(text);
  if (!parsed.ok) {
    throw new ConfigError(
      `invalid ${source} '${text}': '${parsed.item}' ${parsed.problem}; give the cluster's pod and Service ranges as comma-separated CIDRs`,
    );
  }
  return parsed.cidrs;
}

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
  const clusterRanges = parseClusterRanges(
    env[PROJECTOR_ENV.clusterRanges] ?? '',
    PROJECTOR_ENV.clusterRanges,
  );
  const kubeconfig = env[PROJECTOR_ENV.kubeconfig];
  if (kubeconfig) {
    return { targets, clusterRanges, cluster: { kind: 'kubeconfig', path: kubeconfig } };
  }
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
    clusterRanges,
    cluster: {
      kind: 'eks',
      clusterName: parsed.data[PROJECTOR_ENV.clusterName],
      endpoint: parsed.data[PROJECTOR_ENV.endpoint],
      certificateAuthority: parsed.data[PROJECTOR_ENV.certificateAuthority],
    },
  };
}
