import { isAbsolute } from 'node:path';
import { flag, nonEmpty, object, optional, text, withDefault } from '../lib/validation/fields.ts';
import type { AgentSetting } from './setting-shape.ts';

/**
 * The sidecar bootstrap's settings (`sidecar.*`): where istio-proxy's files go. The defaults
 * are the paths Istio's VM packages (istio-sidecar.deb/.rpm) read.
 */
export interface SidecarConfig {
  enabled: boolean;
  /** Put before every path below (a chroot, a container's root, a test's temporary dir). */
  prefix: string;
  paths: SidecarPaths;
  /**
   * The user istio-proxy runs as (`name`, `uid` or `uid:gid`): its group may read the mesh
   * identity and write Istio's `/etc/certs`. It owns none of the agent's files.
   */
  owner: string;
  /** Run with /bin/sh -c after a bootstrap file (not the token) changed. */
  onChange: string | undefined;
}

export interface SidecarPaths {
  clusterEnv: string;
  meshConfig: string;
  rootCert: string;
  token: string;
  hosts: string;
}

export const SIDECAR_DEFAULTS: Readonly<SidecarConfig> = Object.freeze({
  enabled: false,
  prefix: '/',
  paths: Object.freeze({
    clusterEnv: '/var/lib/istio/envoy/cluster.env',
    // Istio's package links /etc/istio to /var/lib/istio: the real path, with no link in it.
    meshConfig: '/var/lib/istio/config/mesh',
    rootCert: '/etc/certs/root-cert.pem',
    // /run, not /var/run (a symlink to it): the agent writes through no link (safe-files.ts);
    // istio-proxy reads the same file as /var/run/secrets/tokens/istio-token.
    token: '/run/secrets/tokens/istio-token',
    hosts: '/etc/hosts',
  }),
  owner: 'istio-proxy',
  onChange: undefined,
});

const path = (key: keyof SidecarPaths, flag: string, help: string): AgentSetting => ({
  key: `sidecar.${key}`,
  flag,
  arg: '<path>',
  env: `REGISTRAR_AGENT_${flag.replaceAll('-', '_').toUpperCase()}`,
  kind: 'value',
  default: SIDECAR_DEFAULTS.paths[key],
  help,
});

/** Rows of the agent's settings table (agent/settings.ts), in the order docs/agent.md shows. */
export const SIDECAR_SETTINGS: readonly AgentSetting[] = [
  {
    key: 'sidecar.enabled',
    flag: 'sidecar',
    env: 'REGISTRAR_AGENT_SIDECAR',
    kind: 'switch',
    default: 'false',
    help: "bootstrap this VM's Istio sidecar from the registrar and keep its mesh identity fresh",
  },
  {
    key: 'sidecar.prefix',
    flag: 'sidecar-prefix',
    arg: '<dir>',
    env: 'REGISTRAR_AGENT_SIDECAR_PREFIX',
    kind: 'value',
    default: SIDECAR_DEFAULTS.prefix,
    help: 'put before every sidecar path (a container root; tests)',
  },
  path('clusterEnv', 'sidecar-cluster-env', "istio-proxy's cluster.env"),
  path('meshConfig', 'sidecar-mesh-config', 'the mesh config istio-proxy reads'),
  path('rootCert', 'sidecar-root-cert', 'the mesh root certificate'),
  path(
    'token',
    'sidecar-token',
    "the mesh identity (ServiceAccount token), 0640 for the proxy's group",
  ),
  path('hosts', 'sidecar-hosts', "where istiod's hosts line goes (one managed line)"),
  {
    key: 'sidecar.owner',
    flag: 'sidecar-owner',
    arg: '<user>',
    env: 'REGISTRAR_AGENT_SIDECAR_OWNER',
    kind: 'value',
    default: SIDECAR_DEFAULTS.owner,
    help: 'the user istio-proxy runs as (name, uid or uid:gid): its group reads the mesh identity',
  },
  {
    key: 'sidecar.onChange',
    flag: 'sidecar-on-change',
    arg: '<command>',
    env: 'REGISTRAR_AGENT_SIDECAR_ON_CHANGE',
    kind: 'value',
    default: 'none',
    help: "run (sh -c, as the agent's user) after a bootstrap file changed; the packaged path unit restarts istio",
  },
];

const absolute = optional(text(isAbsolute, 'must be an absolute path'));

/** The raw `sidecar.*` settings, checked; `toSidecarConfig` fills in the defaults. */
export const sidecarConfigFields = object({
  enabled: withDefault(flag, false),
  prefix: absolute,
  clusterEnv: absolute,
  meshConfig: absolute,
  rootCert: absolute,
  token: absolute,
  hosts: absolute,
  owner: optional(
    text(
      (v) => /^([a-z_][a-z0-9_-]{0,31}\$?|\d+(:\d+)?)$/.test(v),
      'must be a user name, a uid or uid:gid',
    ),
  ),
  onChange: optional(text(nonEmpty, 'must be a non-empty command')),
});

export function toSidecarConfig(raw: ReturnType<typeof sidecarConfigFields>): SidecarConfig {
  const d = SIDECAR_DEFAULTS;
  return {
    enabled: raw.enabled,
    prefix: raw.prefix ?? d.prefix,
    paths: {
      clusterEnv: raw.clusterEnv ?? d.paths.clusterEnv,
      meshConfig: raw.meshConfig ?? d.paths.meshConfig,
      rootCert: raw.rootCert ?? d.paths.rootCert,
      token: raw.token ?? d.paths.token,
      hosts: raw.hosts ?? d.paths.hosts,
    },
    owner: raw.owner ?? d.owner,
    onChange: raw.onChange,
  };
}
