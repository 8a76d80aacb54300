import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DASHBOARD_DEFAULTS, isLoopbackAddress } from '../../lib/dashboard-server/defaults.ts';
import { positiveDurationOption } from '../duration-option.ts';
import { Interrupted, interruption } from '../interrupt.ts';
import type { Target } from '../target.ts';
import { type CommandRegistration, type Stores, UsageError } from './context.ts';
import { openBrowser } from './dashboard-browser.ts';

interface DashboardFlags {
  port: number;
  address: string;
  allowRemote?: boolean;
  browser: boolean;
  refresh: number;
}

const {
  port: DEFAULT_PORT,
  address: DEFAULT_ADDRESS,
  refresh: DEFAULT_REFRESH,
} = DASHBOARD_DEFAULTS;

export const registerDashboard: CommandRegistration = (program, context) => {
  program
    .command('dashboard')
    .description('serve a read-only web view of the registry on this machine and open it')
    .addOption(
      new Option('--port <port>', 'port to serve on (0: any free port)')
        .argParser(parsePort)
        .default(DEFAULT_PORT),
    )
    .addOption(
      new Option(
        '--address <ip>',
        'address to serve on; another than loopback needs --allow-remote',
      )
        .argParser(parseAddress)
        .default(DEFAULT_ADDRESS),
    )
    .option(
      '--allow-remote',
      'serve on a non-loopback --address: anyone who can reach it reads the registry, with your credentials and without logging in',
    )
    .option('--no-browser', 'print the URL only; do not open a browser')
    .addOption(
      positiveDurationOption(
        '--refresh <duration>',
        'how often the page reads the registry again',
        DEFAULT_REFRESH,
      ),
    )
    .addHelpText(
      'after',
      `
The dashboard reads the registry the other commands use (the local runtime's, or --table with
your AWS credentials) and never writes to it. It shows each namespace and zone (connected,
healthy, unhealthy, away), fail static's state with a banner when anything is slowed or held,
the sweeper's recent runs, refused requests by reason, each namespace's entries (the columns of
'get we -o wide', filtered, sorted and paged), and one entry's YAML, holders, health and events.
Pages update themselves; Ctrl-C stops the server (exit 130). docs/operations.md explains each panel.`,
    )
    .action(async (flags: DashboardFlags, command: Command) => {
      if (!isLoopbackAddress(flags.address) && !flags.allowRemote) {
        throw new UsageError(
          `--address ${flags.address} is not a loopback address: anyone who can reach it would read every entry (addresses, labels, identities) with your credentials, without logging in; pass --allow-remote to serve there anyway, or use an SSH tunnel to 127.0.0.1`,
        );
      }
      const stores = await context.stores(command);
      // A first read before serving: no registry, or no credentials, fails here with the
      // CLI's own explanation instead of on the page.
      await stores.catalog.listNamespaces();
      const target = context.target() as Target;
      const { startDashboard } = await import('../../lib/dashboard-server/start.ts');
      const opened = await openSources(stores, target, context.io.cwd, context.now);
      const stop = interruption(context.io);
      try {
        const server = await startDashboard({
          sources: opened.sources,
          address: flags.address,
          port: flags.port,
          refreshMs: flags.refresh,
          notice: (text) => context.io.stderr.write(`note: ${text}\n`),
        });
        if (!isLoopbackAddress(flags.address)) {
          context.io.stderr.write(
            `warning: serving on ${flags.address}: anyone who can reach this address reads the registry with your credentials; nothing asks them to log in\n`,
          );
        }
        context.out(`registrar dashboard: ${server.url}\n`);
        context.io.stderr.write(`reading ${opened.sources.target}; Ctrl-C stops it\n`);
        if (flags.browser && !openBrowser(server.url, context.io.env)) {
          context.io.stderr.write('no browser to open here: open the URL above in yours\n');
        }
        await new Promise<void>((done) => {
          if (stop.signal.aborted) done();
          else stop.signal.addEventListener('abort', () => done(), { once: true });
        });
        await server.close();
      } finally {
        stop.dispose();
        opened.close();
      }
      throw new Interrupted(stop.reason());
    });
};

async function openSources(stores: Stores, target: Target, cwd: string, now: () => number) {
  const [
    { createDocumentClient },
    { DynamoDbSweepRuns },
    { DynamoDbEntryPages },
    refusals,
    { describeTarget },
  ] = await Promise.all([
    import('../../lib/store/dynamodb-client.ts'),
    import('../../lib/store/dynamodb-sweep-runs.ts'),
    import('../../lib/store/dynamodb-entry-pages.ts'),
    import('../../lib/dashboard-server/refusals.ts'),
    import('../target.ts'),
  ]);
  const client = createDocumentClient({
    region: target.region,
    ...(target.endpoint ? { endpoint: target.endpoint } : {}),
  });
  const pages = new DynamoDbEntryPages(client, target.tableName);
  const refusalSource = target.local
    ? // The local runtime keeps its counts beside the local.json the target came from.
      refusals.localRefusals(resolve(cwd, target.source, '..', 'refusals.json'))
    : target.endpoint
      ? refusals.noRefusals(
          `a table at ${target.endpoint} has no CloudWatch metrics to read refusals from`,
        )
      : refusals.cloudWatchRefusals(
          await refusals.awsMetricDataClient(target.region),
          target.region,
        );
  return {
    sources: {
      catalog: stores.catalog,
      disruption: stores.registry,
      sweepRuns: new DynamoDbSweepRuns(client, target.tableName),
      firstEntries: (namespace: string, limit: number) => pages.firstEntries(namespace, limit),
      refusals: refusalSource,
      target: describeTarget(target),
      now,
    },
    close: () => client.destroy(),
  };
}

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535) {
    throw new InvalidArgumentError(`'${text}' is not a port: a whole number from 0 to 65535`);
  }
  return port;
}

function parseAddress(text: string): string {
  const address = text === 'localhost' ? DEFAULT_ADDRESS : text;
  if (isIP(address) === 0) {
    throw new InvalidArgumentError(`'${text}' is not an IP address, such as 127.0.0.1 or ::1`);
  }
  return address;
}
