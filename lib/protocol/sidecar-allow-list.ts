import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { isMapping, join, type Problem, type Reader, shown } from '../validation/fields.ts';

/**
 * Exactly what the agent writes from a `sidecar` answer, whoever sent it (docs/security.md,
 * "The VM side"). Istio's `istio-start.sh` sources cluster.env as root with `set -a`, so every
 * key becomes the environment of root's iptables setup and of istio-proxy (`BASH_ENV`,
 * `LD_PRELOAD`, `PATH`, `ISTIO_BIN_BASE`, `EXEC_USER`, `ISTIO_AGENT_FLAGS` would each run code),
 * and it pastes `ISTIO_SERVICE` and `ISTIO_NAMESPACE` unquoted into the `su -c` command line
 * that starts pilot-agent. So a key is accepted only if it is one Istio's own VM onboarding
 * (`istioctl x workload entry configure`) writes and the registrar builds
 * (lib/mesh-identity/bootstrap.ts), and each value only in the shape Istio reads it in.
 */

const NAME = /^([A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?)?$/;
const PORTS = /^(\d{1,5})(,\d{1,5})*$/;
const nameLike = 'a name of letters, digits, ".", "_" and "-"';

function check(ok: (value: string) => boolean, what: string): Reader<string> {
  return (value, path, problems) => {
    // One line, no control characters: a value is one line of cluster.env and of the mesh file.
    if (typeof value !== 'string' || !/^[^\p{Cc}]*$/u.test(value) || !ok(value)) {
      problems.push({ path, message: `must be ${what} on one line, got ${shown(value)}` });
    }
    return value as string;
  };
}

const isPortList = (v: string) =>
  PORTS.test(v) && v.split(',').every((port) => Number(port) >= 1 && Number(port) <= 65535);

const isCidrList = (v: string) =>
  v === '*' ||
  v.split(',').every((cidr) => {
    const [address, bits, extra] = cidr.split('/');
    const family = isIP(address ?? '');
    const max = family === 4 ? 32 : 128;
    return (
      family !== 0 && extra === undefined && /^\d{1,3}$/.test(bits ?? '') && Number(bits) <= max
    );
  });

function isJson(v: string, shape: (parsed: unknown) => boolean): boolean {
  try {
    return shape(JSON.parse(v));
  } catch {
    return false;
  }
}

const isLabelMap = (v: string) =>
  isJson(v, (m) => isMapping(m) && Object.values(m).every((x) => typeof x === 'string'));

const isPortsJson = (v: string) =>
  isJson(
    v,
    (list) =>
      Array.isArray(list) &&
      list.every(
        (port) =>
          isMapping(port) &&
          Object.keys(port).every((key) => key === 'name' || key === 'containerPort') &&
          typeof port.name === 'string' &&
          NAME.test(port.name) &&
          Number.isInteger(port.containerPort) &&
          (port.containerPort as number) >= 1 &&
          (port.containerPort as number) <= 65535,
      ),
  );

const name = check((v) => NAME.test(v), nameLike);

/** The proxy's metadata: in cluster.env and in the mesh config's `proxyMetadata`. */
export const PROXY_METADATA_KEYS: Readonly<Record<string, Reader<string>>> = Object.freeze({
  CANONICAL_REVISION: name,
  CANONICAL_SERVICE: name,
  ISTIO_METAJSON_LABELS: check(isLabelMap, 'a JSON object of text labels'),
  ISTIO_META_CLUSTER_ID: name,
  ISTIO_META_DNS_CAPTURE: check((v) => v === 'true' || v === 'false', "'true' or 'false'"),
  ISTIO_META_MESH_ID: name,
  ISTIO_META_NETWORK: name,
  ISTIO_META_POD_PORTS: check(isPortsJson, 'a JSON list of {name, containerPort}'),
  ISTIO_META_WORKLOAD_NAME: name,
  POD_NAMESPACE: name,
  SERVICE_ACCOUNT: name,
  TRUST_DOMAIN: name,
});

/** cluster.env: the metadata and what istio-start.sh reads for iptables and the service. */
export const CLUSTER_ENV_KEYS: Readonly<Record<string, Reader<string>>> = Object.freeze({
  ...PROXY_METADATA_KEYS,
  ISTIO_INBOUND_PORTS: check((v) => v === '*' || isPortList(v), "'*' or a list of ports"),
  ISTIO_LOCAL_EXCLUDE_PORTS: check(isPortList, 'a list of ports such as 22,15090,15021,15020'),
  ISTIO_NAMESPACE: name,
  ISTIO_SERVICE: name,
  ISTIO_SERVICE_CIDR: check(isCidrList, "'*' or a list of CIDRs"),
});

/** A mapping whose keys are exactly some of `allowed`, each value read by its own reader. */
export function allowedEnv(
  allowed: Readonly<Record<string, Reader<string>>>,
): Reader<Record<string, string>> {
  return (value, path, problems) => {
    if (!isMapping(value)) {
      problems.push({ path, message: `must be a mapping, got ${shown(value)}` });
      return {};
    }
    const out: Record<string, string> = {};
    for (const [key, item] of Object.entries(value)) {
      const reader = Object.hasOwn(allowed, key) ? allowed[key] : undefined;
      if (!reader) {
        problems.push({
          path: join(path, key),
          message: `is not a key Istio's VM bootstrap defines; allowed: ${Object.keys(allowed).sort().join(', ')}`,
        });
        continue;
      }
      out[key] = reader(item, join(path, key), problems);
    }
    return out;
  };
}

const PEM_FILE =
  /^(\s*-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----)+\s*$/;
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/g;

/**
 * PEM certificates and nothing else: only base64 between the markers, only white space
 * between the blocks, and every block an X.509 certificate that parses.
 */
export const certificates: Reader<string> = (value, path, problems) => {
  if (typeof value !== 'string' || !PEM_FILE.test(value)) {
    problems.push({
      path,
      message: `must be PEM certificates (base64 between BEGIN/END CERTIFICATE lines, nothing else), got ${shown(value)}`,
    });
    return value as string;
  }
  (value.match(PEM_BLOCK) ?? []).forEach((block, index) => {
    try {
      new X509Certificate(block);
    } catch (error) {
      problems.push({
        path,
        message: `certificate ${index + 1} is not an X.509 certificate: ${(error as Error).message}`,
      });
    }
  });
  return value;
};

/**
 * The hosts lines: at most one, for the one host of the discovery address (the host name
 * istio-proxy must resolve to reach istiod), and none when that host is an address itself.
 */
export function hostsProblems(
  hosts: readonly { address: string; hostnames: readonly string[] }[],
  discoveryAddress: string,
  path: string,
): Problem[] {
  const host = discoveryAddress.replace(/:\d+$/, '');
  if (hosts.length === 0) return [];
  if (isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0 || hosts.length > 1) {
    return [
      {
        path,
        message: `must be at most one line, for the discovery host '${host}' (and none when it is an address), got ${hosts.length}`,
      },
    ];
  }
  const names = hosts[0]?.hostnames ?? [];
  if (names.length !== 1 || names[0] !== host) {
    return [
      {
        path: join(path, '0.hostnames'),
        message: `must be exactly ['${host}'], the discovery host, got ${shown(names)}`,
      },
    ];
  }
  return [];
}
