/**
 * `npm start`: the registrar on this machine, no AWS account needed. Prints where agents
 * connect and where the registry is, writes the same to `<dataDir>/local.json` for the CLI,
 * and stops cleanly on Ctrl-C or SIGTERM (every connection gets its $disconnect first).
 */
import { dirname, join } from 'node:path';
import { OptionsError, parseLocalOptions } from './options.ts';

// Powertools reads these when the handlers' modules load, so they are set before the runtime
// is imported: EMF metric lines are for CloudWatch, not for a developer's terminal.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= process.env.LOG_LEVEL ?? 'WARN';

async function main(): Promise<number> {
  let command: ReturnType<typeof parseLocalOptions>;
  try {
    command = parseLocalOptions(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error;
    process.stderr.write(`registrar: ${error.message}\n`);
    return 2;
  }
  if (command.kind === 'help') {
    process.stdout.write(command.text);
    return 0;
  }

  const { startLocalRuntime } = await import('./runtime.ts');
  const { describeSweepPolicy } = await import('../../lib/config.ts');
  const runtime = await startLocalRuntime({ ...command.options, writeLocalJson: true });
  const dataDir = command.options.dataDir ?? '.registrar';
  const localJson = runtime.localJsonPath ?? join(dataDir, 'local.json');
  // A --memory runtime's local.json is in a directory of its own: say how the CLI finds it.
  const cliTarget =
    dirname(localJson) === dataDir
      ? localJson
      : `${localJson} (for the CLI: export REGISTRAR_DATA_DIR=${dirname(localJson)})`;
  process.stdout.write(
    [
      ...runtime.notices.map((notice) => `note: ${notice}`),
      'workload-registrar is running locally',
      `  WebSocket URL:    ${runtime.url}`,
      `  @connections:     ${runtime.managementUrl}/@connections/{id}`,
      `  DynamoDB:         ${runtime.dynamoDbEndpoint} (table ${runtime.tableName}, ${command.options.memory ? 'in memory' : `kept in ${dataDir}`})`,
      `  sweep policy:     ${describeSweepPolicy(runtime.config)}`,
      `  CLI target:       ${cliTarget}`,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      process.stdout.write(`\n${signal}: stopping (closing connections, then the store)\n`);
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  await runtime.close();
  process.stdout.write('stopped\n');
  return 0;
}

main().then(
  // Everything is closed by now; exiting also ends a second-signal race or a lingering socket.
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `registrar: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  },
);
