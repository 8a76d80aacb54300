import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

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
async function bashCompletes(line: string): Promise<string[]> {
  const words = line.split(' ');
  const script = `
_get_comp_words_by_ref() { cur="\${COMP_WORDS[COMP_CWORD]}"; prev="\${COMP_WORDS[COMP_CWORD-1]}"; words=("\${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
compopt() { :; }
registrar() { "${process.execPath}" "${bin}" "$@"; }
source <(registrar completion bash) || exit 3
COMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}
COMP_LINE='${line}'; COMP_POINT=\${#COMP_LINE}
__registrar_complete
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const { stdout } = await run('bash', ['-c', script]);
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

  it("completes a command's options and an option's choices", async () => {
    expect(await bashCompletes('registrar get we --sho')).toEqual(['--show-labels']);
    expect(await bashCompletes('registrar apply --dry-run ')).toEqual(['none', 'client', 'server']);
  });
});

describe('registrar completion zsh', () => {
  it('prints a script zsh loads as the completion of registrar', async () => {
    const { stdout } = await run(process.execPath, [bin, 'completion', 'zsh']);
    expect(stdout.split('\n')[0]).toBe('#compdef registrar');
    expect(stdout).toContain('compdef _registrar registrar');
    expect(stdout).toContain('registrar complete --');
  });

  it('refuses a shell it does not know (exit 2)', async () => {
    const result = await run(process.execPath, [bin, 'completion', 'tcsh']).catch((e) => e);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("command-argument value 'tcsh' is invalid");
  });
});
