import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import * as z from 'zod';
import { ConfigError } from '../config.ts';
import { formatDuration, parseDuration } from '../domain/duration.ts';

/**
 * What the registrar puts into every VM's sidecar bootstrap, and how it mints the mesh
 * identity: read once from the environment (the mesh function on AWS, `npm start --project`
 * locally), validated, frozen. A bad value fails at start naming the variable and the value.
 */
export interface MeshSettings {
  /** The audience of the ServiceAccount token: what istiod's CA accepts (`istio-ca`). */
  tokenAudience: string;
  /** The lifetime asked of the TokenRequest API: 10 min (its minimum) to 1 h. */
  tokenLifetimeSeconds: number;
  /** `defaultConfig.discoveryAddress`: where istio-proxy finds istiod (and its CA). */
  discoveryAddress: string;
  /**
   * The address istiod is reached at from the VMs (an east-west gateway, an internal load
   * balancer): the hosts line `<address> <discovery host>`. Unset: no hosts line (the VMs
   * resolve the discovery host by DNS, e.g. a Route 53 private zone).
   */
  istiodAddress: string | undefined;
  trustDomain: string;
  /** `ISTIO_META_CLUSTER_ID`: the cluster istiod runs in (`Kubernetes` for a single cluster). */
  clusterId: string;
  /** `meshId` / `ISTIO_META_MESH_ID`; unset: none is written. */
  meshId: string | undefined;
  /** The mesh root certificate (PEM); unset: read from the entry namespace's `istio-ca-root-cert`. */
  rootCert: string | undefined;
}

export const MESH_ENV = {
  tokenAudience: 'REGISTRAR_MESH_TOKEN_AUDIENCE',
  tokenLifetime: 'REGISTRAR_MESH_TOKEN_LIFETIME',
  discoveryAddress: 'REGISTRAR_MESH_DISCOVERY_ADDRESS',
  istiodAddress: 'REGISTRAR_MESH_ISTIOD_ADDRESS',
  trustDomain: 'REGISTRAR_MESH_TRUST_DOMAIN',
  clusterId: 'REGISTRAR_MESH_CLUSTER_ID',
  meshId: 'REGISTRAR_MESH_ID',
  rootCert: 'REGISTRAR_MESH_ROOT_CERT',
} as const;

export const MESH_DEFAULTS = {
  tokenAudience: 'istio-ca',
  tokenLifetime: '1h',
  discoveryAddress: 'istiod.istio-system.svc:15012',
  trustDomain: 'cluster.local',
  clusterId: 'Kubernetes',
} as const;

/** The TokenRequest API refuses less than 10 minutes (`expirationSeconds` >= 600). */
export const MIN_TOKEN_LIFETIME_SECONDS = 600;
/** The issue's bound, and istioctl's default: a stolen token is worth an hour at most. */
export const MAX_TOKEN_LIFETIME_SECONDS = 3600;

// Kubernetes label-value-like names: what istio-proxy passes on as metadata unchanged.
const PLAIN = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const HOST_PORT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?:\d{1,5}$/;

const schema = z.object({
  [MESH_ENV.tokenAudience]: z
    .string()
    .regex(/^[\x21-\x7e]{1,253}$/, 'must be one audience, printable, without spaces')
    .default(MESH_DEFAULTS.tokenAudience),
  [MESH_ENV.tokenLifetime]: z
    .string()
    .default(MESH_DEFAULTS.tokenLifetime)
    .transform((text, ctx) => {
      const ms = parseDuration(text);
      const seconds = ms === undefined ? Number.NaN : ms / 1000;
      if (
        !Number.isInteger(seconds) ||
        seconds < MIN_TOKEN_LIFETIME_SECONDS ||
        seconds > MAX_TOKEN_LIFETIME_SECONDS
      ) {
        ctx.addIssue({
          code: 'custom',
          message: `must be whole seconds from ${formatDuration(MIN_TOKEN_LIFETIME_SECONDS * 1000)} (the TokenRequest minimum) to ${formatDuration(MAX_TOKEN_LIFETIME_SECONDS * 1000)}`,
        });
        return z.NEVER;
      }
      return seconds;
    }),
  [MESH_ENV.discoveryAddress]: z
    .string()
    .regex(HOST_PORT, 'must be host:port, such as istiod.istio-system.svc:15012')
    .refine((text) => Number(text.split(':').at(-1)) <= 65535, 'port must be at most 65535')
    .default(MESH_DEFAULTS.discoveryAddress),
  [MESH_ENV.istiodAddress]: z
    .string()
    .refine((text) => isIP(text) !== 0, 'must be an IPv4 or IPv6 address (the hosts line)')
    .optional(),
  [MESH_ENV.trustDomain]: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a DNS name such as cluster.local')
    .default(MESH_DEFAULTS.trustDomain),
  [MESH_ENV.clusterId]: z
    .string()
    .regex(PLAIN, 'must be a name of letters, digits, -, _ and .')
    .default(MESH_DEFAULTS.clusterId),
  [MESH_ENV.meshId]: z
    .string()
    .regex(PLAIN, 'must be a name of letters, digits, -, _ and .')
    .optional(),
  [MESH_ENV.rootCert]: z.string().optional(),
});

/** Reads and validates the mesh settings; throws ConfigError naming the variable and value. */
export function readMeshSettings(env: Record<string, string | undefined>): Readonly<MeshSettings> {
  const defined = Object.fromEntries(
    Object.entries(env).filter(([key, value]) => key.startsWith('REGISTRAR_MESH_') && value),
  );
  const parsed = schema.safeParse(defined);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0] ?? 'environment');
      const value = env[variable];
      const shown =
        value === undefined || variable === MESH_ENV.rootCert ? '' : ` (value '${value}')`;
      return `${variable}${shown}: ${issue.message}`;
    });
    throw new ConfigError(`invalid mesh configuration: ${problems.join('; ')}`);
  }
  const v = parsed.data;
  return Object.freeze({
    tokenAudience: v[MESH_ENV.tokenAudience],
    tokenLifetimeSeconds: v[MESH_ENV.tokenLifetime],
    discoveryAddress: v[MESH_ENV.discoveryAddress],
    istiodAddress: v[MESH_ENV.istiodAddress],
    trustDomain: v[MESH_ENV.trustDomain],
    clusterId: v[MESH_ENV.clusterId],
    meshId: v[MESH_ENV.meshId],
    rootCert: loadRootCert(v[MESH_ENV.rootCert]),
  });
}

/** PEM text, or the path of a PEM file; every certificate in it must parse. */
function loadRootCert(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  let text = value;
  if (!value.includes('-----BEGIN')) {
    try {
      text = readFileSync(value, 'utf8');
    } catch (error) {
      throw new ConfigError(
        `invalid mesh configuration: ${MESH_ENV.rootCert} '${value}': cannot read the PEM file: ${(error as Error).message}`,
      );
    }
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  try {
    if (blocks.length === 0) throw new Error('no certificate in it');
    for (const block of blocks) new X509Certificate(block);
  } catch (error) {
    throw new ConfigError(
      `invalid mesh configuration: ${MESH_ENV.rootCert}: not a PEM certificate (${(error as Error).message})`,
    );
  }
  return `${blocks.join('\n')}\n`;
}
