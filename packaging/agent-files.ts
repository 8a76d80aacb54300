import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One line of packaging/agent-files.txt: a file or directory both agent packages install. */
export interface PackagedPath {
  kind: 'file' | 'config' | 'dir';
  /** A path in the repository, `bundle/<name>` for the agent's executable, or undefined for a dir. */
  source: string | undefined;
  /** Absolute, normalized: no `.`, `..` or empty segment. */
  target: string;
  /** Permission bits, e.g. 0o644. */
  mode: number;
  user: string;
  group: string;
}

export const AGENT_FILES_LIST = 'packaging/agent-files.txt';
/**
 * Sources under this prefix are built for the package's architecture (the executable,
 * packaging/agent-executable.ts), not repository files.
 */
export const BUNDLE_PREFIX = 'bundle/';

const KINDS = new Set(['file', 'config', 'dir']);
const NAME = /^[a-z_][a-z0-9_-]*$/;

/** Reads packaging/agent-files.txt of the repository at `root`. */
export function readAgentFiles(root: string): PackagedPath[] {
  return parseAgentFiles(readFileSync(join(root, AGENT_FILES_LIST), 'utf8'));
}

/**
 * The list's lines, checked: a mistake names its line, the field and the value, and nothing is
 * built from a list with one (a typo in a mode would otherwise ship a world-writable file).
 */
export function parseAgentFiles(text: string): PackagedPath[] {
  const paths: PackagedPath[] = [];
  const targets = new Set<string>();
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${AGENT_FILES_LIST} line ${index + 1}`;
    const fields = line.split(/\s+/);
    if (fields.length !== 5) {
      throw new Error(
        `${where}: expected 5 fields (kind source target mode owner), got ${fields.length}: '${line}'`,
      );
    }
    const [kind = '', source = '', target = '', mode = '', owner = ''] = fields;
    if (!KINDS.has(kind)) {
      throw new Error(`${where}: kind '${kind}' is not one of file, config, dir`);
    }
    if (kind === 'dir' ? source !== '-' : source === '-' || source.startsWith('/')) {
      throw new Error(
        `${where}: source '${source}' must be ${kind === 'dir' ? "'-' for a dir" : 'a path in the repository or bundle/<name>'}`,
      );
    }
    if (!target.startsWith('/') || target.split('/').slice(1).some(isOddSegment)) {
      throw new Error(`${where}: target '${target}' is not an absolute, normalized path`);
    }
    if (targets.has(target)) throw new Error(`${where}: target '${target}' is listed twice`);
    targets.add(target);
    if (!/^0[0-7]{3}$/.test(mode)) {
      throw new Error(`${where}: mode '${mode}' is not an octal mode such as 0644`);
    }
    const bits = Number.parseInt(mode, 8);
    // Nothing a root process reads or runs may be writable by another user: the agent's user
    // could otherwise change what root runs (least privilege on the VM).
    if ((bits & 0o022) !== 0) {
      throw new Error(`${where}: mode '${mode}' lets the group or others write ${target}`);
    }
    const [user = '', group = '', ...rest] = owner.split(':');
    if (rest.length > 0 || !NAME.test(user) || !NAME.test(group)) {
      throw new Error(`${where}: owner '${owner}' is not user:group`);
    }
    paths.push({
      kind: kind as PackagedPath['kind'],
      source: kind === 'dir' ? undefined : source,
      target,
      mode: bits,
      user,
      group,
    });
  }
  return paths;
}

function isOddSegment(segment: string): boolean {
  return segment === '' || segment === '.' || segment === '..';
}

/** Where a listed source is read from: the architecture's build folder or the repository. */
export function sourcePath(root: string, bundleDir: string, source: string): string {
  return source.startsWith(BUNDLE_PREFIX)
    ? join(bundleDir, source.slice(BUNDLE_PREFIX.length))
    : join(root, source);
}
