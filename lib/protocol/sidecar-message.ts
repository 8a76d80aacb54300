import * as z from 'zod';
import { RegistrarError } from '../domain/errors.ts';

/**
 * `{"action":"sidecar"}` (additive to protocol v1): the asking connection's entry's sidecar
 * bootstrap and a fresh mesh identity. The request carries nothing else, on purpose: the
 * service account, namespace and audience all come from the entry the connection holds and
 * the registrar's mesh settings, never from the agent (a field it could set would be a field
 * an attacker could set). Extra fields are refused, not ignored.
 */
export const SIDECAR_ACTION = 'sidecar';

export const sidecarMessage = z.strictObject(
  { action: z.literal(SIDECAR_ACTION) },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unexpected field '${issue.keys[0]}'; send {"action":"sidecar"}: the service account, namespace and audience are the entry's own`
        : undefined,
  },
);
export type SidecarMessage = z.infer<typeof sidecarMessage>;

/** Error codes of `sidecar` refusals (besides NotRegistered, Forbidden and InvalidMessage). */
export const SIDECAR_ERROR_CODES = {
  /** The registrar has no cluster to mint in (no projection configured): not an error of the VM. */
  unavailable: 'SidecarUnavailable',
  /** The entry names no service account: no identity is minted for `default` by accident. */
  noServiceAccount: 'NoServiceAccount',
} as const;

/** 503-like: the registrar is not set up for sidecar bootstraps; registration is unaffected. */
export class SidecarUnavailableError extends RegistrarError {
  constructor(message: string) {
    super(message, 503, SIDECAR_ERROR_CODES.unavailable);
  }
}

/** 400-like: the entry's group names no service account, so there is no identity to mint. */
export class NoServiceAccountError extends RegistrarError {
  constructor(message: string) {
    super(message, 400, SIDECAR_ERROR_CODES.noServiceAccount);
  }
}

// What istio-start.sh sources and istio-agent reads: environment names, plain values.
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
const HOST_PORT = /^[A-Za-z0-9.-]+:\d{1,5}$/;
const HOSTNAME = /^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$/;
// No control characters anywhere: a value is one line of cluster.env, the mesh file, hosts.
const ONE_LINE = /^[^\p{Cc}]*$/u;

const envMap = z.record(
  z.string().regex(ENV_NAME, 'must be an environment variable name'),
  z.string().regex(ONE_LINE, 'must be one line without control characters'),
);

/**
 * The bootstrap as data (the agent renders the files itself, so it never writes shell text it
 * did not quote). The mesh config holds exactly the MeshConfig keys istio-proxy reads from
 * `/etc/istio/config/mesh` for a VM (`defaultConfig.discoveryAddress`, `meshId`,
 * `proxyMetadata`): no npm package carries Istio's MeshConfig schema (`@kubernetes-models/
 * istio` has its CRDs only), so these keys are validated here, strictly.
 */
export const sidecarBootstrapSchema = z.strictObject({
  clusterEnv: envMap,
  meshConfig: z.strictObject({
    defaultConfig: z.strictObject({
      discoveryAddress: z.string().regex(HOST_PORT, 'must be host:port'),
      meshId: z.string().regex(ONE_LINE).min(1).optional(),
      proxyMetadata: envMap,
    }),
  }),
  rootCert: z
    .string()
    .regex(/^-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----\s*$/, 'must be PEM'),
  hosts: z.array(
    z.strictObject({
      address: z.union([z.ipv4(), z.ipv6()]),
      hostnames: z.array(z.string().regex(HOSTNAME, 'must be a host name')).min(1),
    }),
  ),
});
export type SidecarBootstrap = z.infer<typeof sidecarBootstrapSchema>;

export const meshTokenSchema = z.strictObject({
  value: z.string().regex(/^[A-Za-z0-9._-]+$/, 'must be a JWT'),
  audience: z.string().min(1),
  /** When the token expires (RFC 3339), as the API server set it. */
  expiresAt: z.iso.datetime(),
  /** The same as a duration from the reply, so the agent needs no clock agreement. */
  expiresInSeconds: z.number().int().positive(),
});
export type MeshToken = z.infer<typeof meshTokenSchema>;

export const sidecarReplySchema = z.object({
  action: z.literal(SIDECAR_ACTION),
  ok: z.literal(true),
  /** `<namespace>/<name>`: the entry the identity is for. */
  entry: z.string(),
  serviceAccount: z.string(),
  bootstrap: sidecarBootstrapSchema,
  token: meshTokenSchema,
});
export type SidecarReply = z.infer<typeof sidecarReplySchema>;

/** A refusal of `sidecar` names its action, so the agent matches it to the request. */
export interface SidecarErrorReply {
  action: typeof SIDECAR_ACTION;
  ok: false;
  error: { code: string; message: string };
}
