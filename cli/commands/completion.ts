import tab from '@bomb.sh/tab/commander';
import type { CommandRegistration } from './context.ts';

/** What the resource argument of get, describe and delete completes to. */
const RESOURCES: [string, string][] = [
  ['we', 'workloadentries'],
  ['wg', 'workloadgroups'],
  ['workloadentries', 'WorkloadEntries'],
  ['workloadgroups', 'WorkloadGroups'],
];

/**
 * `registrar completion bash|zsh` prints a script for the shell to source; the script asks
 * `registrar complete -- <words>` for the candidates as the user presses Tab, so commands,
 * options and their choices always match the CLI that is installed. Built by @bomb.sh/tab
 * from the command tree (it also knows fish and powershell), not by hand: registered last,
 * after every other command (see `needsAll` in index.ts).
 */
export const registerCompletion: CommandRegistration = (program) => {
  const completion = tab(program, { completionCommandName: 'completion' });
  program.commands
    .find((command) => command.name() === 'completion')
    ?.description('print a bash or zsh completion script: source <(registrar completion bash)')
    .addHelpText(
      'after',
      '\nThe script runs `registrar` from PATH: install the CLI (npm link, or npm install -g in\n' +
        'a checkout), or define it for the session: registrar() { node <checkout>/bin/registrar.js "$@"; }\n\n' +
        'Examples:\n' +
        '  source <(registrar completion bash)                       this shell\n' +
        "  echo 'source <(registrar completion zsh)' >> ~/.zshrc     every zsh",
    );
  for (const name of ['get', 'describe', 'delete']) {
    completion.commands.get(name)?.argument('resource', (complete) => {
      for (const [value, description] of RESOURCES) complete(value, description);
    });
  }
};
