import { join } from 'node:path';
import { stringify } from 'yaml';
import type { SidecarBootstrap } from '../lib/protocol/sidecar-message.ts';
import { readSafely, writeSafely } from './safe-files.ts';
import type { SidecarConfig, SidecarPaths } from './sidecar-settings.ts';
import { lookupUser, type Owner } from './system-users.ts';

/** Marks the one hosts line the agent manages; every other line of the file is kept as it is. */
export const HOSTS_MARKER = '# managed by registrar-agent (istiod)';

export interface WriteReport {
  /** Full paths written, and full paths left as they were (same content, mode and owner). */
  written: string[];
  unchanged: string[];
  /** Files the agent may not write (the system's hosts file), with the lines they lack. */
  notWritten: { path: string; lines: string[] }[];
}

/**
 * cluster.env as istio-start.sh sources it (`set -a; . cluster.env`): one `KEY='value'` per
 * line, sorted, every value single-quoted by the agent itself (a `'` becomes `'\''`), so no
 * value the registrar sends can run as shell when root sources the file.
 */
export function renderClusterEnv(env: Record<string, string>): string {
  const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
  const lines = Object.keys(env)
    .sort()
    .map((key) => `${key}=${quote(env[key] ?? '')}`);
  return `${lines.join('\n')}\n`;
}

/** The mesh config file (istio-proxy's `/etc/istio/config/mesh`): YAML of the MeshConfig keys sent. */
export function renderMeshConfig(meshConfig: SidecarBootstrap['meshConfig']): string {
  return stringify(meshConfig, { lineWidth: 0 });
}

/** The hosts file with the agent's line(s) replaced, or removed when there is none to write. */
export function mergeHosts(existing: string, hosts: SidecarBootstrap['hosts']): string {
  const kept = existing.split('\n').filter((line) => !line.endsWith(HOSTS_MARKER));
  while (kept.length > 0 && kept.at(-1) === '') kept.pop();
  const ours = hosts.map(
    (entry) => `${entry.address} ${entry.hostnames.join(' ')} ${HOSTS_MARKER}`,
  );
  const lines = [...kept, ...ours];
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/**
 * istio-proxy's user: `istio-proxy` (a name, looked up in the system's /etc/passwd), `1337`
 * or `1337:1337`. A missing user is an error that says what to install: Istio's sidecar
 * package creates it.
 */
export async function resolveOwner(owner: string, passwd = '/etc/passwd'): Promise<Owner> {
  const found = await lookupUser(owner, passwd);
  if (found) return found;
  throw new Error(
    `sidecar owner '${owner}' is not a user of this system (${passwd}); install Istio's sidecar package (it creates istio-proxy) or set --sidecar-owner`,
  );
}

/** The paths as written: each under the prefix. */
export function fullPaths(config: SidecarConfig): SidecarPaths {
  const under = (path: string) => (config.prefix === '/' ? path : join(config.prefix, path));
  const p = config.paths;
  return {
    clusterEnv: under(p.clusterEnv),
    meshConfig: under(p.meshConfig),
    rootCert: under(p.rootCert),
    token: under(p.token),
    hosts: under(p.hosts),
  };
}

/**
 * Writes the bootstrap, every file owned by the agent's own user and never handed to another
 * (docs/security.md, "The VM side"): cluster.env and the mesh config 0644 in directories only
 * the agent (or root) can change, since root sources cluster.env; the root certificate 0644
 * in Istio's `/etc/certs`, which istio-proxy may also write (it keeps its own certificates
 * there, and only it reads that directory); the hosts line where the agent may write it. Where
 * it may not (`/etc/hosts` is root's), the line the registrar names is checked, and reported
 * in `notWritten` when it is missing, for the install step to add: nothing is written as root.
 */
export async function writeBootstrap(
  paths: SidecarPaths,
  bootstrap: SidecarBootstrap,
  proxy: Owner,
): Promise<WriteReport> {
  const report: WriteReport = { written: [], unchanged: [], notWritten: [] };
  const note = (path: string, outcome: 'written' | 'unchanged') =>
    (outcome === 'written' ? report.written : report.unchanged).push(path);
  const clusterEnv = renderClusterEnv(bootstrap.clusterEnv);
  note(paths.clusterEnv, await writeSafely(paths.clusterEnv, { content: clusterEnv, mode: 0o644 }));
  const mesh = renderMeshConfig(bootstrap.meshConfig);
  note(paths.meshConfig, await writeSafely(paths.meshConfig, { content: mesh, mode: 0o644 }));
  note(
    paths.rootCert,
    await writeSafely(paths.rootCert, {
      content: bootstrap.rootCert,
      mode: 0o644,
      sharedWithGid: proxy.gid,
    }),
  );
  const hostsText = await readSafely(paths.hosts);
  const merged = mergeHosts(hostsText ?? '', bootstrap.hosts);
  // No istiod address configured and no line of ours to remove: the hosts file is not touched.
  if (merged === (hostsText ?? '') || (hostsText === undefined && bootstrap.hosts.length === 0)) {
    report.unchanged.push(paths.hosts);
    return report;
  }
  try {
    note(paths.hosts, await writeSafely(paths.hosts, { content: merged, mode: 0o644 }));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') throw error;
    const lines = missingHostsLines(hostsText ?? '', bootstrap.hosts);
    if (lines.length > 0) report.notWritten.push({ path: paths.hosts, lines });
    else report.unchanged.push(paths.hosts);
  }
  return report;
}

/**
 * The hosts lines (as the install step adds them, without the marker) that no line of `text`
 * already gives: an address with every one of its names, however the line was written.
 */
export function missingHostsLines(text: string, hosts: SidecarBootstrap['hosts']): string[] {
  const given = text.split('\n').map((line) => line.replace(/#.*$/, '').trim().split(/\s+/));
  return hosts
    .filter(
      (entry) =>
        !given.some(
          ([address, ...names]) =>
            address === entry.address && entry.hostnames.every((name) => names.includes(name)),
        ),
    )
    .map((entry) => `${entry.address} ${entry.hostnames.join(' ')}`);
}

/**
 * The mesh identity: 0640, the agent's own and istio-proxy's group's to read, nobody else's
 * (a probe run as another user cannot read it).
 */
export function writeToken(
  path: string,
  token: string,
  proxy: Owner,
): Promise<'written' | 'unchanged'> {
  return writeSafely(path, { content: token, mode: 0o640, gid: proxy.gid });
}
