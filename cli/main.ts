import { Command, CommanderError } from 'commander';
import { ENV } from '../lib/config.ts';
import { InvalidDocumentsError } from '../lib/protocol/istio-documents.ts';
import { type CliContext, type CliIo, createContext, UsageError } from './commands/context.ts';
import { COMMANDS } from './commands/index.ts';
import { describeTarget, LOCAL_FILE, type Target } from './target.ts';

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
    await buildProgram(context).parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    return report(error, context);
  } finally {
    context.close();
  }
}

export function buildProgram(context: CliContext): Command {
  const program = new Command('registrar')
    .description(
      'operate the workload registrar: WorkloadGroups, WorkloadEntries, join tokens, sweeps',
    )
    .option(
      '--endpoint <url>',
      `DynamoDB endpoint of a local registry (env ${ENV.dynamoDbEndpoint})`,
    )
    .option('--table <name>', `registry table (env ${ENV.tableName})`)
    .option('--region <region>', `AWS region (env ${ENV.region})`)
    .addHelpText(
      'after',
      `\nWithout --table or ${ENV.tableName}, the registry of the local runtime ('npm start') is used,\n` +
        `as it recorded in ${LOCAL_FILE}. Without an endpoint, AWS credentials are used as usual.`,
    )
    // Settings below are inherited by every command added after them.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => context.io.stdout.write(text),
      writeErr: (text) => context.io.stderr.write(text),
    })
    .showHelpAfterError('(add --help for usage)');
  for (const register of COMMANDS) register(program, context);
  return program;
}

function report(error: unknown, context: CliContext): number {
  const write = (text: string) => context.io.stderr.write(text);
  if (error instanceof CommanderError) {
    // Commander has already printed its message (or the help that was asked for).
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
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
    return target.source === LOCAL_FILE
      ? `cannot reach DynamoDB at ${target.endpoint} (from ${LOCAL_FILE}); is 'npm start' still running?`
      : `cannot reach DynamoDB at ${target.endpoint}; check --endpoint or ${ENV.dynamoDbEndpoint}`;
  }
  if (target && error.name === 'CredentialsProviderError') {
    return `no AWS credentials for ${describeTarget(target)}: configure them (aws configure, AWS_PROFILE), or pass --endpoint for a local registry`;
  }
  return error.message;
}
