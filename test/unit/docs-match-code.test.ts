import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { FLAG_OPTIONS as AGENT_FLAGS } from '../../agent/config-sources.ts';
import { AGENT_SETTINGS } from '../../agent/settings.ts';
import { createContext } from '../../cli/commands/context.ts';
import { buildProgram } from '../../cli/main.ts';
import { MESH_OPTION_KEYS } from '../../infra/constructs/mesh-identity.ts';
import { PROJECTOR_OPTION_KEYS } from '../../infra/constructs/projector.ts';
import { GROUP_SOURCE_OPTION_KEYS } from '../../infra/group-source-option.ts';
import { LOCAL_OPTIONS } from '../../infra/local/options.ts';
import { OPTION_KEYS } from '../../infra/stack-options.ts';

/**
 * The docs cannot drift from the code: every `registrar`, `registrar-agent` and `npm start`
 * command shown in README.md and docs/ names commands and flags that exist (read from the
 * same command tree `--help` prints), and every option table lists exactly what the code
 * accepts: the stack's options, `npm start`'s flags, the agent's settings.
 */

const repo = join(import.meta.dirname, '../..');
const pages = [
  'README.md',
  ...readdirSync(join(repo, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
].map((page) => ({ page, text: readFileSync(join(repo, page), 'utf8') }));

/** The text of fenced code blocks (continuation lines joined) and of inline code spans. */
function codeOf(text: string): string[] {
  const snippets: string[] = [];
  const fenced = /^```[^\n]*\n([\s\S]*?)^```/gm;
  for (const match of text.matchAll(fenced)) {
    snippets.push(...(match[1] ?? '').replace(/\\\n\s*/g, ' ').split('\n'));
  }
  const prose = text.replace(fenced, '');
  for (const match of prose.matchAll(/`([^`\n]+)`/g)) snippets.push(match[1] ?? '');
  return snippets;
}

/**
 * Where a command starts in a snippet: the snippet's start (after a `$ ` prompt or variable
 * assignments), or after `$(`, a pipe, `&&` or `;`. A log line quoted in a code span that
 * happens to contain "registrar does ..." is not a command.
 */
const START = String.raw`(?:^\s*(?:\$ )?(?:[A-Z_]+=\S* )*|\$\(|\| |&& |; )`;

/** Each invocation of `program` in a snippet: the words after its name, up to a pipe or comment. */
function invocations(snippet: string, program: RegExp): string[][] {
  const found: string[][] = [];
  for (const match of snippet.matchAll(program)) {
    const rest = snippet.slice((match.index ?? 0) + match[0].length);
    if (rest.startsWith('(')) continue; // a shell function named registrar
    const words = rest.split(/\s+\|\s+|\s+#|&&|;|\$\(|\)|`|<</)[0] ?? '';
    found.push(words.split(/\s+/).filter(Boolean));
  }
  return found;
}

/** The flags among words, as usage lines write them too: `[-n NS|-A]`, `--dry-run[=client]`. */
function flagsOf(words: readonly string[]): string[] {
  // After '--' every word is an operand (`token revoke -- -ID`), as the CLI reads it.
  const end = words.indexOf('--');
  return (end === -1 ? words : words.slice(0, end))
    .flatMap((word) => word.split('|'))
    .map((word) => word.replace(/^[[(]+/, ''))
    .filter((word) => /^--?[A-Za-z]/.test(word))
    .map((word) => (/^--?[A-Za-z][\w-]*/.exec(word)?.[0] ?? word).replace(/-+$/, ''));
}

async function cliTree(): Promise<Command> {
  const context = createContext({
    stdout: { write: () => true },
    stderr: { write: () => true },
    stdin: Readable.from([]),
    env: {},
    cwd: repo,
  });
  try {
    return await buildProgram(context);
  } finally {
    context.close();
  }
}

function optionsOf(command: Command) {
  const options = [];
  for (let at: Command | null = command; at; at = at.parent) options.push(...at.options);
  return options;
}

function optionNames(command: Command): Set<string> {
  const names = new Set(['--help', '-h']);
  for (let at: Command | null = command; at; at = at.parent) {
    for (const option of at.options) {
      if (option.long) names.add(option.long);
      if (option.short) names.add(option.short);
      if (option.negate && option.long) names.add(option.long);
    }
  }
  return names;
}

describe('every command the docs show exists', () => {
  it('registrar: each command path and flag', async () => {
    const program = await cliTree();
    const problems: string[] = [];
    let checked = 0;
    for (const { page, text } of pages) {
      for (const snippet of codeOf(text)) {
        for (const words of invocations(
          snippet,
          new RegExp(`${START}(?:npx |node bin/)?registrar(?:\\.js)? `, 'g'),
        )) {
          checked += 1;
          let command = program;
          const path: string[] = [];
          for (let i = 0; i < words.length; i++) {
            const word = words[i] as string;
            if (word === '--') break;
            if (word.startsWith('-')) {
              // A flag that takes a value, given apart (`--table NAME`), skips that value.
              const option = [...optionsOf(command)].find(
                (o) => o.long === word || o.short === word,
              );
              if (option && (option.required || option.optional)) i++;
              continue;
            }
            if (word.startsWith('[')) continue;
            const sub = command.commands.find(
              (c) => c.name() === word || c.aliases().includes(word),
            );
            if (!sub) break;
            command = sub;
            path.push(word);
          }
          if (path.length === 0 && words.some((w) => !w.startsWith('-'))) {
            problems.push(`${page}: 'registrar ${words.join(' ')}': no such command`);
            continue;
          }
          if (command.commands.length > 0 && command !== program) {
            const next = words[words.indexOf(path[path.length - 1] as string) + 1];
            if (next && !next.startsWith('-') && !next.startsWith('[')) {
              problems.push(`${page}: 'registrar ${words.join(' ')}': no subcommand '${next}'`);
            }
          }
          const known = optionNames(command);
          for (const flag of flagsOf(words)) {
            if (!known.has(flag)) {
              problems.push(
                `${page}: 'registrar ${words.join(' ')}': ${path.join(' ')} has no ${flag}`,
              );
            }
          }
        }
      }
    }
    expect(problems).toEqual([]);
    // The docs show the CLI in about a hundred places: the extraction found them.
    expect(checked).toBeGreaterThan(80);
  });

  it('registrar-agent: each flag', () => {
    const known = new Set(['-h', ...Object.keys(AGENT_FLAGS).map((flag) => `--${flag}`)]);
    const problems: string[] = [];
    for (const { page, text } of pages) {
      for (const snippet of codeOf(text)) {
        const agents = invocations(
          snippet,
          new RegExp(`${START}(?:npx |node bin/)?registrar-agent(?:\\.js)? `, 'g'),
        );
        for (const words of agents) {
          for (const flag of flagsOf(words)) {
            if (!known.has(flag)) problems.push(`${page}: registrar-agent has no ${flag}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('npm start: each flag', () => {
    const known = new Set(Object.keys(LOCAL_OPTIONS).map((flag) => `--${flag}`));
    known.add('-h');
    const problems: string[] = [];
    let seen = 0;
    for (const { page, text } of pages) {
      for (const snippet of codeOf(text)) {
        for (const words of invocations(snippet, new RegExp(`${START}npm start -- `, 'g'))) {
          for (const flag of flagsOf(words)) {
            if (!known.has(flag)) problems.push(`${page}: npm start has no ${flag}`);
            seen += 1;
          }
        }
      }
    }
    expect(problems).toEqual([]);
    expect(seen).toBeGreaterThanOrEqual(8);
  });
});

/** The first cells of a markdown table's rows that start with a code span, below `heading`. */
function tableColumn(text: string, header: RegExp, column = 0): string[] {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => header.test(line));
  expect(start, `a table whose header matches ${header}`).toBeGreaterThanOrEqual(0);
  const cells: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const cell = line.split(/(?<!\\)\|/)[column + 1]?.trim() ?? '';
    cells.push(...[...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string).slice(0, 1));
  }
  return cells;
}

const page = (name: string) => pages.find((p) => p.page === name)?.text ?? '';

describe('every option table lists what the code accepts', () => {
  it("deploy.md's stack options are the stack's", () => {
    const documented = tableColumn(page('docs/deploy.md'), /^\| option\s+\| default/);
    expect([...documented].sort()).toEqual([...OPTION_KEYS, 'stackName'].sort());
    const others = [
      ...Object.values(PROJECTOR_OPTION_KEYS),
      ...Object.keys(MESH_OPTION_KEYS),
      ...Object.values(GROUP_SOURCE_OPTION_KEYS),
    ];
    const docs = page('docs/deploy.md') + page('docs/kubernetes.md');
    expect(others.filter((key) => !docs.includes(key))).toEqual([]);
  });

  it("README's npm start table is npm start's flags", () => {
    const documented = tableColumn(page('README.md'), /^\| flag\s+\| environment/).map(
      (flag) => flag.split(' ')[0],
    );
    const flags = Object.keys(LOCAL_OPTIONS)
      .filter((flag) => flag !== 'help')
      .map((flag) => `--${flag}`);
    expect([...documented].sort()).toEqual([...flags].sort());
  });

  it("agent.md's settings table is the agent's settings", () => {
    const text = page('docs/agent.md');
    const keys = tableColumn(text, /^\| YAML key\s+\| flag/);
    expect([...keys].sort()).toEqual(AGENT_SETTINGS.map((setting) => setting.key).sort());
    const variables = tableColumn(text, /^\| YAML key\s+\| flag/, 2);
    expect([...variables].sort()).toEqual(
      AGENT_SETTINGS.flatMap((setting) => (setting.env ? [setting.env] : [])).sort(),
    );
  });
});
