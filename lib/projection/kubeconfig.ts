import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { type Cluster, type Context, KubeConfig, type User } from '@kubernetes/client-node';

/** A kubeconfig that cannot be used: the message names the file, the context or the flag. */
export class KubeconfigError extends Error {
  override name = 'KubeconfigError';
}

export interface KubeconfigSearch {
  /** `--kubeconfig`: this file only, as kubectl reads it; it must exist. */
  kubeconfig?: string;
  /** `--context`: instead of the current context. */
  context?: string;
  /** For `KUBECONFIG`. */
  env?: Record<string, string | undefined>;
  /** For `~/.kube/config`. */
  home?: string;
}

export interface ResolvedKubeConfig {
  config: KubeConfig;
  /** The files read, in order: what error messages and the banner name. */
  files: string[];
  context: string;
  cluster: { name: string; server: string };
}

/**
 * Finds and loads a kubeconfig the way kubectl does:
 * 1. `--kubeconfig <file>`: that file alone;
 * 2. else `KUBECONFIG`, a list of files (`:`-separated; `;` on Windows) merged in order: the
 *    first file to define a cluster, user or context by name wins, the first `current-context`
 *    set wins, and a file of the list that does not exist is skipped;
 * 3. else `~/.kube/config`.
 * Then `--context` replaces the current context. Unlike @kubernetes/client-node's
 * `loadFromDefault` (which throws on a duplicate name, lets the last file's current-context
 * win and falls back to http://localhost:8080), nothing is guessed: a missing file, context,
 * cluster or user is an error that says which.
 */
export function resolveKubeConfig(search: KubeconfigSearch = {}): ResolvedKubeConfig {
  const env = search.env ?? process.env;
  const files = kubeconfigFiles(search.kubeconfig, env, search.home ?? homedir());
  const merged = { clusters: [] as Cluster[], users: [] as User[], contexts: [] as Context[] };
  let currentContext: string | undefined;
  for (const file of files) {
    const one = new KubeConfig();
    try {
      one.loadFromFile(file);
    } catch (error) {
      throw new KubeconfigError(`cannot read kubeconfig ${file}: ${(error as Error).message}`);
    }
    addNew(merged.clusters, one.getClusters());
    addNew(merged.users, one.getUsers());
    addNew(merged.contexts, one.getContexts());
    currentContext ||= one.getCurrentContext() || undefined;
  }
  const sources = files.join(', ');
  const contextNames = merged.contexts.map((context) => context.name);
  const known = contextNames.length > 0 ? `contexts: ${contextNames.join(', ')}` : 'no contexts';

  const name = search.context ?? currentContext;
  if (!name) {
    throw new KubeconfigError(
      `kubeconfig ${sources} sets no current-context; pass --context <name> (${known})`,
    );
  }
  const context = merged.contexts.find((candidate) => candidate.name === name);
  if (!context) {
    throw new KubeconfigError(
      `${search.context ? '--context' : 'current-context'} '${name}' is not in kubeconfig ${sources} (${known})`,
    );
  }
  const cluster = merged.clusters.find((candidate) => candidate.name === context.cluster);
  if (!cluster) {
    throw new KubeconfigError(
      `context '${name}' names cluster '${context.cluster}', which kubeconfig ${sources} does not define`,
    );
  }
  if (context.user && !merged.users.some((user) => user.name === context.user)) {
    throw new KubeconfigError(
      `context '${name}' names user '${context.user}', which kubeconfig ${sources} does not define`,
    );
  }
  const config = new KubeConfig();
  config.loadFromOptions({ ...merged, currentContext: name });
  return { config, files, context: name, cluster: { name: cluster.name, server: cluster.server } };
}

function kubeconfigFiles(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  home: string,
): string[] {
  if (flag) {
    if (!existsSync(flag)) throw new KubeconfigError(`--kubeconfig ${flag}: no such file`);
    return [flag];
  }
  const list = env.KUBECONFIG;
  if (list) {
    const files = list.split(delimiter).filter(Boolean);
    const found = files.filter((file) => existsSync(file));
    if (found.length === 0) {
      throw new KubeconfigError(
        `none of the KUBECONFIG files exists (${files.join(', ')}); set KUBECONFIG or pass --kubeconfig <file>`,
      );
    }
    return found;
  }
  const fallback = join(home, '.kube', 'config');
  if (!existsSync(fallback)) {
    throw new KubeconfigError(
      `no kubeconfig: KUBECONFIG is not set and ${fallback} does not exist; pass --kubeconfig <file>`,
    );
  }
  return [fallback];
}

/** kubectl's merge: the first definition of a name wins, later ones are ignored. */
function addNew<T extends { name: string }>(into: T[], from: readonly T[]): void {
  for (const item of from) {
    if (!into.some((existing) => existing.name === item.name)) into.push(item);
  }
}
