import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { createContext } from '../../cli/commands/context.ts';
import { buildProgram } from '../../cli/main.ts';

/** The README's summary of the CLI names every command the CLI has (it once missed one). */

/** Every command `--help` shows (not the hidden `complete` the completion scripts call). */
function leafCommands(command: Command, path: string[] = []): string[] {
  const visible = command
    .createHelp()
    .visibleCommands(command)
    .filter((sub) => sub.name() !== 'help');
  if (visible.length === 0) return [path.join(' ')];
  return visible.flatMap((sub) => leafCommands(sub, [...path, sub.name()]));
}

describe("README's CLI section", async () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = /## The CLI: `registrar`\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
  const program = await buildProgram(
    createContext({
      stdout: { write: () => true },
      stderr: { write: () => true },
      stdin: Readable.from(['']),
      env: {},
      cwd: '.',
    }),
  );

  it.each(leafCommands(program))('shows `registrar %s`', (command) => {
    expect(section).toContain(`npx registrar ${command}`);
  });

  it('shows --version', () => {
    expect(section).toContain('npx registrar --version');
  });
});
