/**
 * `npm start`: the registrar on this machine, no AWS account needed. Prints where agents
 * connect and where the registry is, writes the same to `<dataDir>/local.json` for the CLI,
 * and stops cleanly on Ctrl-C or SIGTERM (every connection gets its $disconnect first).
 */
import { dirname, join } from 'node:path';
import { type ConsoleSettings, loggerLevelFor } from './console-log.ts';
import { OptionsError, parseLocalOptions } from './options.ts';
import { watchParent } from './parent-watch.ts';
import type { LocalRuntime, LocalRuntimeOptions } from './runtime.ts';

// Powertools reads this when the handlers' modules load, so it is set before the runtime is
// imported: EMF metric lines are for CloudWatch, not for a developer's terminal.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

/**
 * `npm start | tee log`: Ctrl-C stops `tee` with us, and every line written after that (the
 * shutdown's own) fails with EPIPE, which crashed the runtime before it closed its connections
 * and released the data dir. A stream whose reader is gone is written no more; the shutdown
 * goes on.
 */
function surviveClosedReader(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stream.write = (() => true) as typeof stream.write;
  });
}
surviveClosedReader(process.stdout);
surviveClosedReader(process.stderr);

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

  // Read by Powertools when the handlers load, like POWERTOOLS_METRICS_DISABLED above.
  process.env.POWERTOOLS_LOG_LEVEL = loggerLevelFor(command.console);
  if (command.console.format === 'human') await humanConsole(command);
  else await jsonLines();

  // Installed before the start: a Ctrl-C while the store and the gateway come up is kept and
  // honoured once they are up, so they are closed (and the data dir's lock and local.json
  // released) instead of the process dying half-started.
  let pendingSignal: string | undefined;
  let onSignal: ((signal: string) => void) | undefined;
  const signalled = (signal: string) => {
    if (onSignal) onSignal(signal);
    else pendingSignal ??= signal;
  };
  process.once('SIGINT', () => signalled('SIGINT'));
  process.once('SIGTERM', () => signalled('SIGTERM'));
  watchParent((parent) => signalled(`the process that started it (PID ${parent}) exited`));

  const { startLocalRuntime } = await import('./runtime.ts');
  const { describeSweepPolicy } = await import('../../lib/config.ts');
  const runtime = await startLocalRuntime({
    ...command.options,
    writeLocalJson: true,
    waitForFirstSweep: false,
  });
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
      `  auth mode:        ${describeAuthMode(runtime.config.authMode, command.options)}`,
      `  sweep policy:     ${describeSweepPolicy(runtime.config)}`,
      ...(runtime.projection
        ? [`  projection:       ${describeProjection(runtime.projection)}`]
        : []),
      ...(command.options.groupSource?.kind === 'cluster'
        ? [
            `  groups:           from the cluster${command.options.groupSource.selector ? ` (labelled ${command.options.groupSource.selector})` : ''}, watched; registrar apply of a group refuses`,
          ]
        : []),
      ...(runtime.dashboardUrl
        ? [`  dashboard:        ${runtime.dashboardUrl} (read-only; as registrar dashboard)`]
        : []),
      `  CLI target:       ${cliTarget}`,
      `  console:          ${describeConsole(command.console)}`,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  const storeFailed = await new Promise<Error | undefined>((resolve) => {
    const stop = (signal: string) => {
      process.stdout.write(`\n${signal}: stopping (closing connections, then the store)\n`);
      resolve(undefined);
    };
    if (pendingSignal) stop(pendingSignal);
    else onSignal = stop;
    // The runtime has closed itself: agents reconnect to the next one started.
    void runtime.storeFailed?.then(resolve);
  });
  if (storeFailed) {
    process.stderr.write(`registrar: ${storeFailed.message}\n`);
    return 1;
  }
  await runtime.close();
  process.stdout.write('stopped\n');
  return 0;
}

/** Renders the functions' log lines as one short line per event (console-log.ts). */
async function humanConsole(command: { options: LocalRuntimeOptions; console: ConsoleSettings }) {
  const { logger } = await import('../../lib/observability.ts');
  const { DEFAULTS } = await import('../../lib/config.ts');
  const { parseDuration } = await import('../../lib/domain/duration.ts');
  const { createRenderer, installConsole, renderingConsole } = await import('./console-log.ts');
  const render = createRenderer({
    gracePeriodMs: command.options.gracePeriodMs ?? parseDuration(DEFAULTS.gracePeriod) ?? 0,
    maxConnectionAgeMs:
      command.options.maxConnectionAgeMs ?? parseDuration(DEFAULTS.maxConnectionAge) ?? 0,
    level: command.console.level,
  });
  installConsole(
    logger,
    renderingConsole(render, (line) => process.stdout.write(line)),
  );
}

/** The functions' JSON lines as they are, but each one line and free of terminal controls. */
async function jsonLines() {
  const { logger } = await import('../../lib/observability.ts');
  const { installConsole, jsonConsole } = await import('./console-log.ts');
  installConsole(
    logger,
    jsonConsole((line) => process.stdout.write(line)),
  );
}

function describeAuthMode(mode: string, options: LocalRuntimeOptions): string {
  if (mode !== 'iam') {
    return 'token (agents present a join token: npx registrar token create -n <namespace>)';
  }
  const signedBy =
    options.instanceIdentityCerts === undefined
      ? "AWS's certificates"
      : `a certificate of ${options.instanceIdentityCerts}`;
  const documents =
    options.instanceAttestation === 'optional'
      ? `instance identity documents optional (--instance-attestation optional), checked against ${signedBy}`
      : `instance identity documents required, signed by ${signedBy}`;
  return `iam (SigV4-presigned upgrades, ${options.iamCallers?.length ?? 0} caller(s) from --iam-callers; ${documents})`;
}

function describeProjection(projection: NonNullable<LocalRuntime['projection']>): string {
  const { targets, cluster, context, files } = projection;
  return `${targets.join(', ')} into cluster ${cluster.name} (${cluster.server}), context ${context} of ${files.join(', ')}`;
}

function describeConsole(settings: ConsoleSettings): string {
  const level = `LOG_LEVEL=${settings.level.toLowerCase()}`;
  return settings.format === 'json'
    ? `the functions' JSON log lines (${level})`
    : `one line per event (${level}; --log-format json for the raw lines)`;
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
