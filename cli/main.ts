import { Command, CommanderError, Help } from 'commander';
import { ENV } from '../lib/config-env.ts';
import { InvalidDocumentsError } from '../lib/protocol/istio-document-problems.ts';
import {
  type CliContext,
  type CliIo,
  createContext,
  ExitStatus,
  ReportedFailure,
  UsageError,
} from './commands/context.ts';
import { COMMANDS, type CommandEntry } from './commands/index.ts';
import { bareDryRunAsClient } from './dry-run-option.ts';
import { Interrupted } from './interrupt.ts';
import { DATA_DIR_ENV, describeTarget, LOCAL_FILE, type Target } from './target.ts';
import { projectVersion } from './version.ts';

export type { CliIo } from './commands/context.ts';

/** Exit codes: 0 done, 1 the operation failed, 2 the command line was wrong (as kubectl). */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/**
 * Runs `registrar <argv>` and returns its exit code. Never calls process.exit, so tests run it
 * in-process against a fresh table, and the bin script only sets process.exitCode.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const context = createContext(io);
  try {
    const args = splitShortOptionValues(argv);
    const program = await buildProgram(context, args);
    await program.parseAsync(bareDryRunAsClient(args, dryRunTakesMode(program, args)), {
      from: 'user',
    });
    return EXIT.ok;
  } catch (error) {
    return report(error, context);
  } finally {
    context.close();
  }
}

/**
 * `-o=json`, `-n=shop`: kubectl (pflag) reads a short option's value after '='; commander
 * would read '=json'. Split them before parsing; everything after `--` is left alone.
 */
export function splitShortOptionValues(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  const options = end === -1 ? argv : argv.slice(0, end);
  const split = options.flatMap((arg) => {
    const match = /^(-[A-Za-z])=(.*)$/s.exec(arg);
    return match ? [match[1] as string, match[2] as string] : [arg];
  });
  return end === -1 ? split : [...split, ...argv.slice(end)];
}

/**
 * Whether the command the line names has kubectl's `--dry-run[=mode]` (an optional value):
 * the deepest command its words reach, so `namespace set --dry-run` is read as `delete` is.
 */
function dryRunTakesMode(program: Command, argv: readonly string[]): boolean {
  let command: Command | undefined;
  let at: Command = program;
  for (const word of argv) {
    if (word === '--') break;
    if (word.startsWith('-')) continue;
    const sub = at.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) break;
    command = sub;
    at = sub;
  }
  return command?.options.some((o) => o.long === '--dry-run' && o.optional) ?? false;
}

/**
 * The program with the commands `argv` needs loaded: the one it names (`get`, or `help get`),
 * every one for completion, none for `--help`; the others are listed by name and description
 * only. Without `argv`, every command is loaded (the README test walks the whole tree).
 */
export async function buildProgram(
  context: CliContext,
  argv?: readonly string[],
): Promise<Command> {
  const program = rootProgram(context);
  const named = argv === undefined ? undefined : commandNamed(program, argv);
  const loadAll = argv === undefined || named?.needsAll === true;
  const terms = new Map<Command, string>();
  for (const entry of COMMANDS) {
    if (loadAll || entry === named) {
      (await entry.load())(program, context);
      continue;
    }
    // Listed in --help and known to commander's "did you mean", never run: the command line
    // names another command, so this one's options and code are not needed.
    const stub = program.command(entry.name).description(entry.description);
    terms.set(stub, entry.term);
  }
  if (terms.size > 0) {
    program.configureHelp({
      subcommandTerm: (command) => terms.get(command) ?? new Help().subcommandTerm(command),
    });
  }
  return program;
}

/** The command the command line names, skipping the root's options and their values. */
function commandNamed(program: Command, argv: readonly string[]): CommandEntry | undefined {
  const takesValue = new Set(
    program.options
      .filter((option) => option.required || option.optional)
      .flatMap((option) => [option.long, option.short].filter((flag) => flag !== undefined)),
  );
  let helpAsked = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return undefined;
    if (arg.startsWith('-')) {
      if (takesValue.has(arg)) i++;
      continue;
    }
    if (arg === 'help' && !helpAsked) {
      helpAsked = true;
      continue;
    }
    return COMMANDS.find((entry) => entry.name === arg || entry.hidden?.includes(arg));
  }
  return undefined;
}

function rootProgram(context: CliContext): Command {
  const program = new Command('registrar')
    .description(
      'operate the workload registrar: WorkloadGroups, WorkloadEntries, join tokens, sweeps',
    )
    .version(`registrar ${projectVersion()}`, '--version', 'print the version and exit')
    .option(
      '--endpoint <url>',
      `DynamoDB endpoint of a local registry (env ${ENV.dynamoDbEndpoint})`,
    )
    .option('--table <name>', `registry table (env ${ENV.tableName})`)
    .option('--region <region>', `AWS region (env ${ENV.region})`)
    .addHelpText(
      'after',
      `\nWithout --table or ${ENV.tableName}, the registry of the local runtime ('npm start') is used,\n` +
        `as it recorded in ${LOCAL_FILE}: the nearest one in this directory or a parent (as git\n` +
        `finds .git), or <${DATA_DIR_ENV}>/local.json when ${DATA_DIR_ENV} is set. Without an\n` +
        'endpoint, AWS credentials are used as usual.\n\n' +
        'Exit status: 0 done, 1 the operation failed, 2 a usage error, 130 interrupted (Ctrl-C).',
    )
    // Settings below are inherited by every command added after them.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => context.io.stdout.write(text),
      writeErr: (text) => context.io.stderr.write(text),
    })
    .showHelpAfterError('(add --help for usage)');
  return program;
}

function report(error: unknown, context: CliContext): number {
  const write = (text: string) => context.io.stderr.write(text);
  if (error instanceof CommanderError) {
    // Commander has already printed its message (or the help that was asked for).
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof Interrupted) return error.exitCode;
  if (error instanceof ExitStatus) {
    if (error.cause !== undefined) report(error.cause, context);
    return error.exitCode;
  }
  if (error instanceof ReportedFailure) return EXIT.failed;
  if (error instanceof UsageError) {
    write(`error: ${error.message}\n(add --help for usage)\n`);
    return EXIT.usage;
  }
  if (error instanceof InvalidDocumentsError) {
    write(
      `${error.problems.map((problem) => `error: ${problem}`).join('\n')}\nnothing was written\n`,
    );
    return EXIT.failed;
  }
  write(`error: ${explain(error, context.target())}\n`);
  return EXIT.failed;
}

/** Turns the AWS SDK's failures into what the operator should do about them. */
function explain(error: unknown, target: Target | undefined): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: string }).code ?? '';
  if (target && error.name === 'ResourceNotFoundException') {
    return `no such table: ${describeTarget(target)}; check --table, or restart 'npm start'`;
  }
  if (target?.endpoint && (code === 'ECONNREFUSED' || /ECONNREFUSED/.test(error.message))) {
    return target.local
      ? `cannot reach DynamoDB at ${target.endpoint} (from ${target.source}); is 'npm start' still running?`
      : `cannot reach DynamoDB at ${target.endpoint}; check --endpoint or ${ENV.dynamoDbEndpoint}`;
  }
  if (target && error.name === 'CredentialsProviderError') {
    return `no AWS credentials for ${describeTarget(target)}: configure them (aws configure, AWS_PROFILE), or pass --endpoint for a local registry`;
  }
  return error.message;
}
