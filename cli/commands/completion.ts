import tab from '@bomb.sh/tab/commander';
import type { Command } from 'commander';
import { completionValuesOf } from '../output-option.ts';
import { completionCandidates, type RegistryCandidates } from './completion-candidates.ts';
import type { CliContext, CommandRegistration } from './context.ts';

/** What the resource argument of describe, delete, cordon and uncordon completes to. */
const RESOURCES: [string, string][] = [
  ['we', 'workloadentries'],
  ['wg', 'workloadgroups'],
  ['workloadentries', 'WorkloadEntries'],
  ['workloadgroups', 'WorkloadGroups'],
];

/** `get` lists two more: the entries' events and their agents' versions. */
const GET_RESOURCES: [string, string][] = [
  ...RESOURCES,
  ['events', "the entries' events"],
  ['agents', 'entries per agent version'],
];

/** The commands whose first argument is a group, written as kubectl's `rollout` takes it. */
const ROLLOUT_COMMANDS = ['rollout status', 'rollout pause', 'rollout resume'];

const SHELLS = ['bash', 'zsh', 'fish', 'powershell'] as const;

/**
 * `registrar completion bash|zsh|fish` prints a script for the shell to source; the script asks
 * `registrar complete -- <words>` for the candidates as the user presses Tab, so commands,
 * options and their choices always match the CLI that is installed. Built by @bomb.sh/tab
 * from the command tree (it also knows fish and powershell), not by hand: registered last,
 * after every other command (see `needsAll` in index.ts). On top of what it derives: object
 * names and namespaces read from the registry the line targets, and `-o`'s formats.
 */
export const registerCompletion: CommandRegistration = (program, context) => {
  const completion = tab(program, { completionCommandName: 'completion' });
  const script = program.commands.find((command) => command.name() === 'completion');
  script
    ?.description(
      'print a bash, zsh or fish completion script: source <(registrar completion bash)',
    )
    .addHelpText(
      'after',
      '\nThe script runs `registrar` from PATH: install the CLI (npm link, or npm install -g in\n' +
        'a checkout), or define it for the session: registrar() { node <checkout>/bin/registrar.js "$@"; }\n\n' +
        'Examples:\n' +
        '  source <(registrar completion bash)                       this shell\n' +
        "  echo 'source <(registrar completion zsh)' >> ~/.zshrc     every zsh\n" +
        '  registrar completion fish > ~/.config/fish/completions/registrar.fish   fish',
    )
    .action((shell: (typeof SHELLS)[number]) => {
      context.out(scriptFor(completion, shell));
    });

  // Tab's handlers answer synchronously: what the registry holds is read before they run,
  // from the words of the line being completed.
  let read: RegistryCandidates = { names: [], namespaces: [] };
  program.commands
    .find((command) => command.name() === 'complete')
    ?.hook('preAction', async (_complete, action) => {
      read = await completionCandidates(context, action.args);
    });

  for (const name of ['get', 'describe', 'delete', 'cordon', 'uncordon']) {
    completion.commands.get(name)?.argument('resource', (complete) => {
      for (const [value, description] of name === 'get' ? GET_RESOURCES : RESOURCES) {
        complete(value, description);
      }
    });
    completion.commands.get(name)?.argument(
      'names',
      (complete) => {
        for (const value of read.names) complete(value, '');
      },
      true,
    );
  }
  // `rollout status wg/<Tab>`: the namespace's groups as wg/NAME (the type and name in one
  // word, as kubectl's rollout takes them), or after a separate `wg`, their names.
  for (const path of ROLLOUT_COMMANDS) {
    completion.commands.get(path)?.argument('resource', (complete) => {
      complete('wg', 'workloadgroups');
      for (const value of read.names) complete(`wg/${value}`, '');
    });
    completion.commands.get(path)?.argument('name', (complete) => {
      for (const value of read.names) complete(value, '');
    });
  }
  for (const [path, command] of commandsByPath(program)) {
    const completed = completion.commands.get(path);
    if (!completed) continue;
    for (const option of command.options) {
      const long = option.long?.slice(2);
      if (long === 'namespace') {
        completed.option(
          long,
          option.description,
          (complete) => {
            for (const value of read.namespaces) complete(value, 'namespace');
          },
          'n',
        );
      }
      const values = completionValuesOf(option);
      if (long && values) {
        completed.option(
          long,
          option.description,
          (complete) => {
            for (const value of values) complete(value, '');
          },
          option.short?.slice(1),
        );
      }
    }
  }
};

/** Every command below the program, by its space-separated path (`token list`). */
function commandsByPath(program: Command): [string, Command][] {
  const found: [string, Command][] = [];
  const walk = (command: Command, path: string) => {
    for (const sub of command.commands) {
      const subPath = path ? `${path} ${sub.name()}` : sub.name();
      found.push([subPath, sub]);
      walk(sub, subPath);
    }
  };
  walk(program, '');
  return found;
}

/**
 * The script for a shell, from Tab. In bash, Tab declares its directive numbers `readonly`
 * under generic names: sourcing the script twice (a second `source ~/.bashrc`), or after
 * another CLI's Tab script, failed on "readonly variable". They are made this CLI's own.
 */
function scriptFor(completion: ReturnType<typeof tab>, shell: (typeof SHELLS)[number]): string {
  const lines: string[] = [];
  const log = console.log;
  console.log = (...parts: unknown[]) => lines.push(parts.join(' '));
  try {
    completion.setup('registrar', 'registrar', shell);
  } finally {
    console.log = log;
  }
  const text = `${lines.join('\n')}\n`;
  if (shell !== 'bash') return text;
  return text
    .replace(/^readonly (ShellCompDirective\w+=)/gm, '$1')
    .replaceAll('ShellCompDirective', '__registrar_ShellCompDirective');
}

export type { CliContext };
