import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { stringify } from 'yaml';
import type { SidecarBootstrap } from '../lib/protocol/sidecar-message.ts';
import type { SidecarConfig, SidecarPaths } from './sidecar-settings.ts';

/** Marks the one hosts line the agent manages; every other line of the file is kept as it is. */
export const HOSTS_MARKER = '# managed by registrar-agent (istiod)';

export interface Owner {
  uid: number;
  gid: number;
}

export interface WriteReport {
  /** Full paths written, and full paths left as they were (same content, mode and owner). */
  written: string[];
  unchanged: string[];
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

/** The mesh config file (`/etc/istio/config/mesh`): YAML of the MeshConfig keys sent. */
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
 * `istio-proxy` (a name, looked up in the system's /etc/passwd), `1337` or `1337:1337`. A
 * missing user is an error that says what to install: Istio's sidecar package creates it.
 */
export async function resolveOwner(owner: string, passwd = '/etc/passwd'): Promise<Owner> {
  const numeric = /^(\d+)(?::(\d+))?$/.exec(owner);
  if (numeric) {
    const uid = Number(numeric[1]);
    return { uid, gid: numeric[2] === undefined ? uid : Number(numeric[2]) };
  }
  const text = await readFile(passwd, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (name === owner && uid !== undefined && gid !== undefined) {
      return { uid: Number(uid), gid: Number(gid) };
    }
  }
  throw new Error(
    `sidecar owner '${owner}' is not a user of this system (${passwd}); install Istio's sidecar package (it creates istio-proxy) or set --sidecar-owner`,
  );
}

/**
 * Writes a file so that a reader sees the old content or the new, never a part: a temporary
 * file beside it (same file system), its mode and owner set, flushed, then renamed over the
 * path. A file whose content, mode and owner are already right is not touched (its mtime
 * stays, and nothing that watches it wakes up). Missing directories are made, owned like the
 * file when an owner is given.
 */
export async function writeAtomically(
  path: string,
  content: string,
  mode: number,
  owner: Owner | undefined,
): Promise<'written' | 'unchanged'> {
  const current = await stat(path).catch(() => undefined);
  if (
    current &&
    (current.mode & 0o7777) === mode &&
    (owner === undefined || (current.uid === owner.uid && current.gid === owner.gid)) &&
    (await readFile(path, 'utf8').catch(() => undefined)) === content
  ) {
    return 'unchanged';
  }
  await makeDirectories(dirname(path), owner);
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}`);
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(content, 'utf8');
    if (owner) await handle.chown(owner.uid, owner.gid);
    // After the chown: changing the owner may clear set-id bits, and the umask narrowed `open`.
    await handle.chmod(mode);
    await handle.sync();
    await handle.close();
    await rename(temporary, path);
    return 'written';
  } catch (error) {
    await handle.close().catch(() => {});
    await unlink(temporary).catch(() => {});
    throw error;
  }
}

async function makeDirectories(directory: string, owner: Owner | undefined): Promise<void> {
  const missing: string[] = [];
  for (let at = directory; !(await exists(at)); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const made of missing) {
    await mkdir(made, { mode: 0o755 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    if (owner) {
      const handle = await open(made, 'r');
      await handle.chown(owner.uid, owner.gid).finally(() => handle.close());
    }
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
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
 * Writes the bootstrap: cluster.env, the mesh config and the root certificate owned by the
 * proxy's user (0644: nothing in them is secret), the hosts file keeping its own owner and
 * mode (only the agent's line changes).
 */
export async function writeBootstrap(
  paths: SidecarPaths,
  bootstrap: SidecarBootstrap,
  owner: Owner,
): Promise<WriteReport> {
  const report: WriteReport = { written: [], unchanged: [] };
  const note = (path: string, outcome: 'written' | 'unchanged') =>
    (outcome === 'written' ? report.written : report.unchanged).push(path);
  note(
    paths.clusterEnv,
    await writeAtomically(paths.clusterEnv, renderClusterEnv(bootstrap.clusterEnv), 0o644, owner),
  );
  note(
    paths.meshConfig,
    await writeAtomically(paths.meshConfig, renderMeshConfig(bootstrap.meshConfig), 0o644, owner),
  );
  note(paths.rootCert, await writeAtomically(paths.rootCert, bootstrap.rootCert, 0o644, owner));
  const hostsNow = await stat(paths.hosts).catch(() => undefined);
  const hostsText = await readFile(paths.hosts, 'utf8').catch(() => '');
  // No istiod address configured and no line of ours to remove: the hosts file is not touched.
  if (
    mergeHosts(hostsText, bootstrap.hosts) === hostsText ||
    (!hostsNow && bootstrap.hosts.length === 0)
  ) {
    report.unchanged.push(paths.hosts);
    return report;
  }
  note(
    paths.hosts,
    await writeAtomically(
      paths.hosts,
      mergeHosts(hostsText, bootstrap.hosts),
      hostsNow ? hostsNow.mode & 0o7777 : 0o644,
      hostsNow ? { uid: hostsNow.uid, gid: hostsNow.gid } : undefined,
    ),
  );
  return report;
}

/** The mesh identity: readable by the proxy's user alone (0600), never by the agent's group. */
export function writeToken(
  path: string,
  token: string,
  owner: Owner,
): Promise<'written' | 'unchanged'> {
  return writeAtomically(path, token, 0o600, owner);
}
