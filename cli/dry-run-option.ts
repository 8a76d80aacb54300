import { Option } from 'commander';

export type DryRunMode = 'none' | 'client' | 'server';

const MODES: readonly DryRunMode[] = ['none', 'client', 'server'];

/**
 * kubectl's `--dry-run[=none|client|server]`: a bare `--dry-run` is `client`. kubectl (pflag)
 * reads the mode only after '='; commander would take the next word (`delete --dry-run we x`),
 * so `bareDryRunAsClient` rewrites a bare flag before parsing.
 */
export function dryRunOption(what: { client: string; server: string }): Option {
  return new Option(
    '--dry-run [mode]',
    `write nothing: 'client' (also a bare --dry-run) ${what.client}; 'server' ${what.server}`,
  )
    .choices(MODES)
    .preset('client')
    .default('none');
}

/**
 * Before commander parses: a `--dry-run` that is not followed by a mode means `client`, as in
 * kubectl, for the commands whose option takes a mode (`takesMode`); others keep a boolean.
 */
export function bareDryRunAsClient(argv: readonly string[], takesMode: boolean): string[] {
  if (!takesMode) return [...argv];
  const end = argv.indexOf('--');
  return argv.map((arg, i) => {
    if (arg !== '--dry-run' || (end !== -1 && i > end)) return arg;
    const next = argv[i + 1];
    return next !== undefined && (MODES as readonly string[]).includes(next)
      ? arg
      : '--dry-run=client';
  });
}

/** What a dry run adds to each line it prints: `(dry run)`, or `(server dry run)`. */
export function dryRunSuffix(mode: DryRunMode): string {
  return mode === 'server' ? '(server dry run)' : '(dry run)';
}

/**
 * `--dry-run[=client|server]` of a command that changes the registry but has no preview of
 * its own to tell apart: both modes read what they need and write nothing.
 */
export function writeNothingOption(): Option {
  return dryRunOption({
    client: 'checks the input, reads the registry and says what would change',
    server: 'the same, said as a server dry run',
  });
}
