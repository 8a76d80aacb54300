import * as z from 'zod';
import { SIDECAR_ACTION } from './sidecar-action.ts';

// The action itself and its errors: in sidecar-action.ts, which the message function imports.
export {
  NoServiceAccountError,
  SIDECAR_ACTION,
  SIDECAR_ERROR_CODES,
  type SidecarMessage,
  SidecarUnavailableError,
} from './sidecar-action.ts';

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
