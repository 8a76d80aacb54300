import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * `registrar completion bash|zsh`: the script a shell sources, and what it completes. Runs the
 * real CLI under a real bash, the way a user's Tab does: the script calls `registrar complete
 * -- <words>` and fills COMPREPLY.
 */

const run = promisify(execFile);
const bin = new URL('../../bin/registrar.js', import.meta.url).pathname;

/**
 * What bash offers after `line` (the last word being completed). The two helpers come from the
 * bash-completion package on a user's machine; minimal stand-ins here, as CI may not have it.
 */
let dynamo: TestDynamo;
let registry: Record<string, string>;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  registry = { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName };
  const groups = ['shop', 'blog']
    .map(
      (ns) =>
        `apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: web, namespace: ${ns}}\nspec: {template: {ports: {http: 80}}}\n`,
    )
    .join('---\n');
  expect((await captureCli(['apply', '-f', '-'], { env: registry, stdin: groups })).code).toBe(0);
  const store = composeRegistry(dynamo.client, dynamo.tableName);
  for (const name of ['web-10.0.0.1', 'web-10.0.0.2']) {
    await store.connect(
      connectChange({ name, namespace: 'shop', connectionId: name, connectedAt: 1 }),
    );
  }
});

afterAll(async () => {
  await dynamo?.close();
});

async function bashCompletes(line: string, twice = false): Promise<string[]> {
  const words = line.split(' ');
  const script = `
_get_comp_words_by_ref() { cur="\${COMP_WORDS[COMP_CWORD]}"; prev="\${COMP_WORDS[COMP_CWORD-1]}"; words=("\${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
compopt() { :; }
registrar() { "${process.execPath}" "${bin}" "$@"; }
source <(registrar completion bash) || exit 3
${twice ? 'source <(registrar completion bash) 2>&1 || exit 4' : ''}
COMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}
COMP_LINE='${line}'; COMP_POINT=\${#COMP_LINE}
__registrar_complete
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const { stdout } = await run('bash', ['-c', script], { env: { ...process.env, ...registry } });
  return stdout.split('\n').filter(Boolean);
}

describe('registrar completion bash', () => {
  it('completes command names', async () => {
    expect(await bashCompletes('registrar de')).toEqual(['describe', 'delete']);
  });

  it('completes the resource types of get', async () => {
    expect(await bashCompletes('registrar get w')).toEqual([
      'we',
      'wg',
      'workloadentries',
      'workloadgroups',
    ]);
  });

  it('completes the other types get lists: events and agents', async () => {
    expect(await bashCompletes('registrar get e')).toEqual(['events']);
    expect(await bashCompletes('registrar get a')).toEqual(['agents']);
    // describe and delete take only groups and entries.
    expect(await bashCompletes('registrar describe e')).toEqual([]);
  });

  it("completes a command's options and an option's choices", async () => {
    expect(await bashCompletes('registrar get we --sho')).toEqual(['--show-labels']);
    expect(await bashCompletes('registrar apply --dry-run ')).toEqual(['none', 'client', 'server']);
  });
});

// Each completion is two processes (the script, then `registrar complete`): on a busy machine
// a few seconds each.
describe('registrar completion bash: what the registry holds', { timeout: 120_000 }, () => {
  it('completes the names of the namespace the line names', async () => {
    expect(await bashCompletes('registrar get we -n shop ')).toEqual([
      'web-10.0.0.1',
      'web-10.0.0.2',
    ]);
    expect(await bashCompletes('registrar describe we web-10.0.0.2 -n shop web-10.0.0.')).toEqual([
      'web-10.0.0.1',
      'web-10.0.0.2',
    ]);
    expect(await bashCompletes('registrar delete wg -n blog ')).toEqual(['web']);
    expect(await bashCompletes('registrar get we -n blog ')).toEqual([]);
  });

  it("completes a rollout's group as wg/NAME, or its name after a separate wg", async () => {
    expect(await bashCompletes('registrar rollout status -n shop wg/')).toEqual(['wg/web']);
    expect(await bashCompletes('registrar rollout pause -n blog ')).toEqual(['wg', 'wg/web']);
    expect(await bashCompletes('registrar rollout resume wg -n shop ')).toEqual(['web']);
  });

  it('completes namespaces after -n, and the formats of -o', async () => {
    expect(await bashCompletes('registrar get we -n ')).toEqual(['blog', 'shop']);
    expect(await bashCompletes('registrar token list -n s')).toEqual(['shop']);
    expect(await bashCompletes('registrar get we -o ')).toEqual([
      'wide',
      'name',
      'json',
      'yaml',
      'jsonpath=',
      'go-template=',
      'go-template-file=',
      'custom-columns=',
      'custom-columns-file=',
    ]);
    expect(await bashCompletes('registrar sweep status -o y')).toEqual(['yaml']);
  });

  it('still completes when the script is sourced twice (a second source ~/.bashrc)', async () => {
    expect(await bashCompletes('registrar de', true)).toEqual(['describe', 'delete']);
  });
});

describe('registrar completion zsh and fish', () => {
  it('prints a script zsh loads as the completion of registrar', async () => {
    const { stdout } = await run(process.execPath, [bin, 'completion', 'zsh']);
    expect(stdout.split('\n')[0]).toBe('#compdef registrar');
    expect(stdout).toContain('compdef _registrar registrar');
    expect(stdout).toContain('registrar complete --');
  });

  it('prints a script fish loads as the completion of registrar', async () => {
    const { stdout } = await run(process.execPath, [bin, 'completion', 'fish']);
    expect(stdout).toContain('complete -c registrar');
    expect(stdout).toContain('registrar complete --');
  });

  it('refuses a shell it does not know (exit 2)', async () => {
    const result = await run(process.execPath, [bin, 'completion', 'tcsh']).catch((e) => e);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("command-argument value 'tcsh' is invalid");
  });
});
