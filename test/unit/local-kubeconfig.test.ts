import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeconfigError, resolveKubeConfig } from '../../lib/projection/kubeconfig.ts';

/** kubectl's kubeconfig resolution, over real files in a temporary directory. */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

interface Definition {
  clusters?: Record<string, string>;
  contexts?: Record<string, { cluster: string; user?: string }>;
  users?: string[];
  current?: string;
}

/** Writes a kubeconfig: clusters by name -> server, contexts by name, users by name. */
function kubeconfig(file: string, definition: Definition): string {
  const path = join(dir, file);
  const lines = ['apiVersion: v1', 'kind: Config', 'clusters:'];
  for (const [name, server] of Object.entries(definition.clusters ?? {})) {
    lines.push(`- name: ${name}`, '  cluster:', `    server: ${server}`);
  }
  lines.push('contexts:');
  for (const [name, context] of Object.entries(definition.contexts ?? {})) {
    lines.push(
      `- name: ${name}`,
      '  context:',
      `    cluster: ${context.cluster}`,
      `    user: ${context.user ?? 'me'}`,
    );
  }
  lines.push('users:');
  for (const name of definition.users ?? ['me']) {
    lines.push(`- name: ${name}`, '  user:', '    token: abc');
  }
  if (definition.current) lines.push(`current-context: ${definition.current}`);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const one = (name: string, server: string, current = true): Definition => ({
  clusters: { [name]: server },
  contexts: { [name]: { cluster: name } },
  ...(current ? { current: name } : {}),
});

function refusal(search: Parameters<typeof resolveKubeConfig>[0]): string {
  try {
    resolveKubeConfig(search);
  } catch (error) {
    expect(error).toBeInstanceOf(KubeconfigError);
    return (error as Error).message;
  }
  throw new Error('expected the kubeconfig to be refused');
}

describe('resolveKubeConfig', () => {
  it('reads --kubeconfig alone, even when KUBECONFIG is set', () => {
    const flag = kubeconfig('flag', one('flagged', 'https://flag:6443'));
    const listed = kubeconfig('listed', one('listed', 'https://listed:6443'));
    const resolved = resolveKubeConfig({
      kubeconfig: flag,
      env: { KUBECONFIG: listed },
      home: dir,
    });
    expect(resolved.files).toEqual([flag]);
    expect(resolved.context).toBe('flagged');
    expect(resolved.cluster).toEqual({ name: 'flagged', server: 'https://flag:6443' });
    expect(resolved.config.getCurrentCluster()?.server).toBe('https://flag:6443');
  });

  it('merges the KUBECONFIG list as kubectl does: the first definition and current-context win', () => {
    const first = kubeconfig('a', {
      clusters: { shared: 'https://first:6443' },
      contexts: { dev: { cluster: 'shared' } },
    });
    const second = kubeconfig('b', {
      clusters: { shared: 'https://second:6443', prod: 'https://prod:6443' },
      contexts: { dev: { cluster: 'prod' }, prod: { cluster: 'prod' } },
      current: 'dev',
    });
    const third = kubeconfig('c', { ...one('other', 'https://other:6443'), current: 'other' });
    const missing = join(dir, 'not-there');
    const resolved = resolveKubeConfig({
      env: { KUBECONFIG: [first, missing, second, third].join(delimiter) },
      home: dir,
    });
    // The missing file is skipped; the first file's cluster and context definitions win, and
    // the current-context comes from the first file that sets one (the second).
    expect(resolved.files).toEqual([first, second, third]);
    expect(resolved.context).toBe('dev');
    expect(resolved.cluster).toEqual({ name: 'shared', server: 'https://first:6443' });
    expect(resolved.config.getContexts().map((context) => context.name)).toEqual([
      'dev',
      'prod',
      'other',
    ]);
  });

  it('falls back to ~/.kube/config when KUBECONFIG is unset or empty', () => {
    const home = join(dir, 'home');
    const fallback = kubeconfig('home/.kube/config', one('kind-mesh', 'https://127.0.0.1:6443'));
    for (const env of [{}, { KUBECONFIG: '' }]) {
      const resolved = resolveKubeConfig({ env, home });
      expect(resolved.files).toEqual([fallback]);
      expect(resolved.context).toBe('kind-mesh');
    }
  });

  it('uses --context instead of the current context', () => {
    const file = kubeconfig('two', {
      clusters: { dev: 'https://dev:6443', prod: 'https://prod:6443' },
      contexts: { dev: { cluster: 'dev' }, prod: { cluster: 'prod' } },
      current: 'dev',
    });
    const resolved = resolveKubeConfig({ kubeconfig: file, context: 'prod', env: {}, home: dir });
    expect(resolved.context).toBe('prod');
    expect(resolved.config.getCurrentCluster()?.server).toBe('https://prod:6443');
  });

  it('names a --context the kubeconfig lacks, and the contexts it has', () => {
    const file = kubeconfig('k', one('kind-mesh', 'https://127.0.0.1:6443'));
    expect(refusal({ kubeconfig: file, context: 'staging', env: {}, home: dir })).toBe(
      `--context 'staging' is not in kubeconfig ${file} (contexts: kind-mesh)`,
    );
  });

  it('says that no current-context is set, rather than "no current cluster"', () => {
    const file = kubeconfig('k', one('kind-mesh', 'https://127.0.0.1:6443', false));
    expect(refusal({ kubeconfig: file, env: {}, home: dir })).toBe(
      `kubeconfig ${file} sets no current-context; pass --context <name> (contexts: kind-mesh)`,
    );
  });

  it('names a context whose cluster or user is not defined', () => {
    const noCluster = kubeconfig('c', {
      contexts: { dev: { cluster: 'gone' } },
      current: 'dev',
    });
    expect(refusal({ kubeconfig: noCluster, env: {}, home: dir })).toBe(
      `context 'dev' names cluster 'gone', which kubeconfig ${noCluster} does not define`,
    );
    const noUser = kubeconfig('u', {
      clusters: { dev: 'https://dev:6443' },
      contexts: { dev: { cluster: 'dev', user: 'nobody' } },
      current: 'dev',
    });
    expect(refusal({ kubeconfig: noUser, env: {}, home: dir })).toBe(
      `context 'dev' names user 'nobody', which kubeconfig ${noUser} does not define`,
    );
  });

  it('refuses a missing --kubeconfig, an all-missing KUBECONFIG and no kubeconfig at all', () => {
    expect(refusal({ kubeconfig: join(dir, 'nope'), env: {}, home: dir })).toBe(
      `--kubeconfig ${join(dir, 'nope')}: no such file`,
    );
    const listed = [join(dir, 'x'), join(dir, 'y')];
    expect(refusal({ env: { KUBECONFIG: listed.join(delimiter) }, home: dir })).toBe(
      `none of the KUBECONFIG files exists (${listed.join(', ')}); set KUBECONFIG or pass --kubeconfig <file>`,
    );
    expect(refusal({ env: {}, home: dir })).toBe(
      `no kubeconfig: KUBECONFIG is not set and ${join(dir, '.kube', 'config')} does not exist; pass --kubeconfig <file>`,
    );
  });

  it('names a file that is not a kubeconfig', () => {
    const broken = join(dir, 'broken');
    writeFileSync(broken, 'clusters: [unterminated\n');
    expect(refusal({ kubeconfig: broken, env: {}, home: dir })).toMatch(
      new RegExp(`^cannot read kubeconfig ${broken}: `),
    );
  });
});
