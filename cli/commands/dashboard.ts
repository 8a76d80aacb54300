import { isIP } from 'node:net';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DASHBOARD_DEFAULTS, isLoopbackAddress } from '../../lib/dashboard-server/defaults.ts';
import { positiveDurationOption } from '../duration-option.ts';
import { Interrupted, interruption } from '../interrupt.ts';
import type { Target } from '../target.ts';
import { type CommandRegistration, UsageError } from './context.ts';
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
'get we -o wide', filtered, sorted and paged), one entry's YAML, holders, events and health over
time, and a group's template and rollout. Pages update themselves and say "Not live" when a read
fails; over the local runtime they follow local.json across restarts. Ctrl-C stops the server
(exit 130). docs/operations.md explains each panel.`,
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
      const [{ startDashboard }, { followLocalRuntime, openSources }, { resolveTarget }] =
        await Promise.all([
          import('../../lib/dashboard-server/start.ts'),
          import('./dashboard-sources.ts'),
          import('../target.ts'),
        ]);
      const open = (to: Target) => openSources(to, context.io.cwd, context.now);
      // The local runtime moves its store on every restart: the dashboard follows local.json.
      const opened = target.local
        ? await followLocalRuntime(
            target,
            () => resolveTarget(command.optsWithGlobals(), context.io.env, context.io.cwd),
            open,
          )
        : await open(target);
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
