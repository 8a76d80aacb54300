import { isIP } from 'node:net';
import {
  join,
  list,
  nonEmpty,
  object,
  optional,
  type Problem,
  type Reader,
  readAll,
  text,
} from '../validation/fields.ts';
import { SIDECAR_ACTION } from './sidecar-action.ts';
import {
  allowedEnv,
  CLUSTER_ENV_KEYS,
  certificates,
  hostsProblems,
  PROXY_METADATA_KEYS,
} from './sidecar-allow-list.ts';

// The action itself and its errors: in sidecar-action.ts, which the message function imports.
export {
  NoServiceAccountError,
  SIDECAR_ACTION,
  SIDECAR_ERROR_CODES,
  type SidecarMessage,
  SidecarUnavailableError,
} from './sidecar-action.ts';

/**
 * The bootstrap as data (the agent renders the files itself, so it never writes shell text it
 * did not quote). The mesh config holds exactly the MeshConfig keys istio-proxy reads from
 * `/etc/istio/config/mesh` for a VM (`defaultConfig.discoveryAddress`, `meshId`,
 * `proxyMetadata`): no npm package carries Istio's MeshConfig schema (`@kubernetes-models/
 * istio` has its CRDs only), so these keys are checked here, strictly (an unknown key is
 * refused). cluster.env and `proxyMetadata` hold only the keys of sidecar-allow-list.ts, each
 * value in its shape; the root certificate must parse; the hosts lines name only the discovery
 * host. Plain checks, not a validation library: the agent reads this reply on every VM
 * (issue 27).
 */
export interface SidecarBootstrap {
  clusterEnv: Record<string, string>;
  meshConfig: MeshConfig;
  rootCert: string;
  hosts: { address: string; hostnames: string[] }[];
}

export interface MeshConfig {
  defaultConfig: {
    discoveryAddress: string;
    meshId?: string;
    proxyMetadata: Record<string, string>;
  };
}

export interface MeshToken {
  value: string;
  audience: string;
  /** When the token expires (RFC 3339), as the API server set it. */
  expiresAt: string;
  /** The same as a duration from the reply, so the agent needs no clock agreement. */
  expiresInSeconds: number;
}

export interface SidecarReply {
  action: typeof SIDECAR_ACTION;
  ok: true;
  /** `<namespace>/<name>`: the entry the identity is for. */
  entry: string;
  serviceAccount: string;
  bootstrap: SidecarBootstrap;
  token: MeshToken;
}

/** A refusal of `sidecar` names its action, so the agent matches it to the request. */
export interface SidecarErrorReply {
  action: typeof SIDECAR_ACTION;
  ok: false;
  error: { code: string; message: string };
}

const HOST_PORT = /^[A-Za-z0-9.-]+:\d{1,5}$/;
const HOSTNAME = /^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$/;
// No control characters anywhere: a value is one line of cluster.env, the mesh file, hosts.
const ONE_LINE = /^[^\p{Cc}]*$/u;
// RFC 3339 in UTC, as the API server writes a TokenRequest's expirationTimestamp.
const UTC_TIME = /^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?Z$/;

/** `2030-02-31` is not a date (Date would roll it over to March). */
function isCalendarDate(day: string): boolean {
  const date = new Date(`${day}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === day;
}

const isPort = (v: string) => Number(v.slice(v.lastIndexOf(':') + 1)) <= 65535;

const meshConfig = object(
  {
    defaultConfig: object(
      {
        discoveryAddress: text((v) => HOST_PORT.test(v) && isPort(v), 'must be host:port'),
        meshId: optional(
          text((v) => v.length > 0 && ONE_LINE.test(v), 'must be one non-empty line'),
        ),
        proxyMetadata: allowedEnv(PROXY_METADATA_KEYS),
      },
      { strict: true },
    ),
  },
  { strict: true },
) as Reader<MeshConfig>;

const bootstrapFields = object(
  {
    clusterEnv: allowedEnv(CLUSTER_ENV_KEYS),
    meshConfig,
    rootCert: certificates,
    hosts: list(
      object(
        {
          address: text((v) => isIP(v) !== 0, 'must be an IPv4 or IPv6 address'),
          hostnames: list(
            text((v) => HOSTNAME.test(v), 'must be a host name'),
            1,
          ),
        },
        { strict: true },
      ),
    ),
  },
  { strict: true },
) as Reader<SidecarBootstrap>;

/** The fields, then the one rule across them: hosts name only the discovery host. */
const sidecarBootstrap: Reader<SidecarBootstrap> = (value, path, problems) => {
  const before = problems.length;
  const read = bootstrapFields(value, path, problems);
  if (problems.length === before) {
    problems.push(
      ...hostsProblems(
        read.hosts,
        read.meshConfig.defaultConfig.discoveryAddress,
        join(path, 'hosts'),
      ),
    );
  }
  return read;
};

const meshToken = object(
  {
    // Never echoed: the reply's problems are logged.
    value: text((v) => /^[A-Za-z0-9._-]+$/.test(v), 'must be a JWT', { secret: true }),
    audience: text(nonEmpty, 'must be a non-empty string'),
    expiresAt: text(
      (v) => UTC_TIME.test(v) && isCalendarDate(v.slice(0, 10)),
      'must be an RFC 3339 time in UTC such as 2026-01-01T00:00:00Z',
    ),
    expiresInSeconds: (value, path, problems) => {
      if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
        problems.push({ path, message: `must be a positive whole number, got ${String(value)}` });
      }
      return value as number;
    },
  },
  { strict: true },
) as Reader<MeshToken>;

const literal =
  <T>(expected: T): Reader<T> =>
  (value, path, problems) => {
    if (value !== expected) {
      problems.push({ path, message: `must be ${JSON.stringify(expected)}, got ${String(value)}` });
    }
    return value as T;
  };

// Not strict: a newer registrar may add fields to the reply, which this agent ignores.
const sidecarReply = object({
  action: literal(SIDECAR_ACTION),
  ok: literal(true as const),
  entry: text(() => true, 'must be a string'),
  serviceAccount: text(() => true, 'must be a string'),
  bootstrap: sidecarBootstrap,
  token: meshToken,
}) as Reader<SidecarReply>;

/** The registrar's answer to `sidecar`, checked before anything is written from it. */
export function readSidecarReply(value: unknown) {
  return readAll(sidecarReply, value);
}

/** What is wrong with a bootstrap (none: the agent would write it). */
export function sidecarBootstrapProblems(value: unknown): Problem[] {
  const problems: Problem[] = [];
  sidecarBootstrap(value, '', problems);
  return problems;
}

/** What is wrong with a mesh config file's content (none: istio-proxy reads only known keys). */
export function meshConfigProblems(value: unknown): Problem[] {
  const problems: Problem[] = [];
  meshConfig(value, '', problems);
  return problems;
}
