import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BashCompleter,
  bashCompleter,
  registrarBin as bin,
} from '../fixtures/bash-completion.ts';

/**
 * `registrar completion bash|zsh|fish`: the script a shell loads, and the words bash completes
 * that need no registry (commands, types, options). Completing what the registry holds:
 * test/integration/cli-completion.test.ts.
 */

const run = promisify(execFile);
let bash: BashCompleter;

beforeAll(async () => {
  bash = await bashCompleter();
});

afterAll(async () => {
  await bash?.close();
});

describe('registrar completion bash', () => {
  it('completes command names', async () => {
    expect(await bash.completes('registrar de')).toEqual(['describe', 'delete']);
  });

  it('completes the resource types of get', async () => {
    expect(await bash.completes('registrar get w')).toEqual([
      'we',
      'wg',
      'workloadentries',
      'workloadgroups',
    ]);
  });

  it('completes the other types get lists: events and agents', async () => {
    expect(await bash.completes('registrar get e')).toEqual(['events']);
    expect(await bash.completes('registrar get a')).toEqual(['agents']);
    // describe and delete take only groups and entries.
    expect(await bash.completes('registrar describe e')).toEqual([]);
  });

  it("completes a command's options and an option's choices", async () => {
    expect(await bash.completes('registrar get we --sho')).toEqual(['--show-labels']);
    expect(await bash.completes('registrar apply --dry-run ')).toEqual([
      'none',
      'client',
      'server',
    ]);
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
