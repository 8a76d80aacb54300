import type { Command } from 'commander';
import { NotFoundError } from '../../lib/domain/errors.ts';
import { DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE } from '../../lib/domain/heartbeat-pace.ts';
import {
  DEFAULT_LIMITS,
  formatChecksPerMinute,
  formatNetwork,
  formatRate,
  type NamespaceSettings,
} from '../../lib/domain/namespace-settings.ts';
import {
  asList,
  formatTable,
  formatTimestamp,
  toJson,
  toYaml,
} from '../../lib/presentation/output.ts';
import type {
  SettingsChange,
  SettingsField,
} from '../../lib/registration/namespace-settings-store.ts';
import { type DryRunMode, dryRunSuffix, writeNothingOption } from '../dry-run-option.ts';
import {
  addressRangesOption,
  connectRateOption,
  heartbeatChecksOption,
  maxEntriesOption,
  networksOption,
  RESET,
  type Resettable,
} from '../namespace-options.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import { type CliContext, type CommandRegistration, type Stores, UsageError } from './context.ts';
import { namespaceOf, namespaceOption } from './resources.ts';

interface SetOptions {
  namespace?: string;
  dryRun: DryRunMode;
  maxEntries?: Resettable<number>;
  connectRate?: Resettable<number>;
  networks?: Resettable<string[]>;
  addressRanges?: Resettable<string[]>;
  heartbeatChecks?: Resettable<number>;
}

/**
 * `registrar namespace`: what the operator allows each namespace (docs/operations.md, quotas
 * and limits): its quotas (connected entries, connect rate), the networks its entries may be
 * in, and the CIDRs their addresses must be in. `$connect` reads them through a cache, so a
 * change reaches every connect within REGISTRAR_NAMESPACE_SETTINGS_CACHE (30 s).
 */
export const registerNamespace: CommandRegistration = (program, context) => {
  const namespace = program
    .command('namespace')
    .alias('ns')
    .description('quotas, networks and address ranges a namespace is allowed');

  namespace
    .command('set')
    .description("set a namespace's quotas and limits (the others stay as they are)")
    .addOption(namespaceOption())
    .addOption(maxEntriesOption())
    .addOption(connectRateOption())
    .addOption(networksOption('its entries'))
    .addOption(addressRangesOption())
    .addOption(heartbeatChecksOption())
    .addOption(writeNothingOption())
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  registrar namespace set -n shop --max-entries 5000 --connect-rate 50/s\n' +
        '  registrar namespace set -n shop --networks vpc-shop,<none> --address-ranges 10.20.0.0/16\n' +
        '  registrar namespace set -n shop --networks any      # back to the default\n' +
        '  registrar namespace set -n shop --heartbeat-checks 4800/m\n' +
        `Defaults: max-entries ${DEFAULT_LIMITS.maxEntries}, connect-rate ${formatRate(DEFAULT_LIMITS.connectRate)}, any network, any address, heartbeat-checks ${formatChecksPerMinute(DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE)}.`,
    )
    .action(async (options: SetOptions, command: Command) => {
      const change = settingsChange(options);
      const name = namespaceOf(options);
      await withNamespaceStores(context, command, async ({ settings }) => {
        if (options.dryRun !== 'none') {
          // The settings the write would leave: the stored ones with the change applied.
          const current = (await settings.getSettings(name, true)) ?? { namespace: name };
          const after: NamespaceSettings = { ...current, ...change.set };
          for (const field of change.unset) delete after[field];
          context.out(
            `namespace "${name}" configured ${dryRunSuffix(options.dryRun)}: ${describeSettings(after)}\n`,
          );
          return;
        }
        const stored = await settings.updateSettings(name, change, context.now());
        context.out(`namespace "${name}" configured: ${describeSettings(stored)}\n`);
      });
    });

  namespace
    .command('get')
    .alias('list')
    .description("show namespaces' quotas and limits, with how many entries are connected")
    .addOption(namespaceOption())
    .option('-A, --all-namespaces', 'every namespace with settings or with groups and entries')
    .addOption(outputOption(['name', 'json', 'yaml']))
    .action(
      async (
        options: { namespace?: string; allNamespaces?: boolean; output: OutputSpec },
        command: Command,
      ) => {
        await withNamespaceStores(context, command, async ({ settings, usage, catalog }) => {
          let rows: NamespaceSettings[];
          if (options.allNamespaces) {
            const [configured, known] = await Promise.all([
              settings.listSettings(),
              catalog.listNamespaces(),
            ]);
            const byName = new Map(configured.map((s) => [s.namespace, s]));
            for (const name of known.namespaces) {
              if (!byName.has(name)) byName.set(name, { namespace: name });
            }
            rows = [...byName.values()].sort((a, b) => a.namespace.localeCompare(b.namespace));
          } else {
            const name = namespaceOf(options);
            rows = [(await settings.getSettings(name, true)) ?? { namespace: name }];
          }
          const connected = await Promise.all(
            rows.map((row) => usage.connectedEntries(row.namespace)),
          );
          if (options.output.format === 'name') {
            context.out(rows.map((row) => `namespace/${row.namespace}\n`).join(''));
            return;
          }
          if (options.output.format === 'json' || options.output.format === 'yaml') {
            const list = asList(rows.map((row, i) => settingsView(row, connected[i] ?? 0)));
            context.out(options.output.format === 'json' ? toJson(list) : toYaml(list));
            return;
          }
          context.out(
            formatTable(
              [
                'NAMESPACE',
                'CONNECTED',
                'MAX-ENTRIES',
                'CONNECT-RATE',
                'NETWORKS',
                'ADDRESS-RANGES',
                'HEARTBEAT-CHECKS',
              ],
              rows.map((row, i) => [
                row.namespace,
                String(connected[i] ?? 0),
                row.maxEntries === undefined
                  ? `${DEFAULT_LIMITS.maxEntries} (default)`
                  : String(row.maxEntries),
                row.connectRate === undefined
                  ? `${formatRate(DEFAULT_LIMITS.connectRate)} (default)`
                  : formatRate(row.connectRate),
                row.networks === undefined ? '<any>' : row.networks.map(formatNetwork).join(','),
                row.addressRanges === undefined ? '<any>' : row.addressRanges.join(','),
                heartbeatChecksShown(row),
              ]),
            ),
          );
        });
      },
    );

  namespace
    .command('reset')
    .description('put every quota and limit of a namespace back to its default')
    .addOption(namespaceOption())
    .addOption(writeNothingOption())
    .action(async (options: { namespace?: string; dryRun: DryRunMode }, command: Command) => {
      const name = namespaceOf(options);
      await withNamespaceStores(context, command, async ({ settings }) => {
        const dryRun = options.dryRun !== 'none';
        const had = dryRun
          ? (await settings.getSettings(name, true)) !== undefined
          : await settings.deleteSettings(name);
        if (!had) {
          throw new NotFoundError(
            `namespace "${name}" has no settings: it already has every default; see registrar namespace get -A`,
          );
        }
        const suffix = dryRun ? ` ${dryRunSuffix(options.dryRun)}` : '';
        context.out(
          `namespace "${name}" reset${suffix}: ${describeSettings({ namespace: name })}\n`,
        );
      });
    });
};

const FIELDS: readonly (keyof SetOptions & SettingsField)[] = [
  'maxEntries',
  'connectRate',
  'networks',
  'addressRanges',
  'heartbeatChecks',
];

function settingsChange(options: SetOptions): SettingsChange {
  const set: SettingsChange['set'] = {};
  const unset: SettingsField[] = [];
  for (const field of FIELDS) {
    const value = options[field];
    if (value === undefined) continue;
    if (value === RESET) unset.push(field);
    else Object.assign(set, { [field]: value });
  }
  if (Object.keys(set).length === 0 && unset.length === 0) {
    throw new UsageError(
      'nothing to set: give --max-entries, --connect-rate, --networks, --address-ranges or --heartbeat-checks',
    );
  }
  return { set, unset };
}

/** One line: every quota and limit, defaults named as such. */
export function describeSettings(settings: NamespaceSettings): string {
  const entries = settings.maxEntries ?? `${DEFAULT_LIMITS.maxEntries} (default)`;
  const rate =
    settings.connectRate === undefined
      ? `${formatRate(DEFAULT_LIMITS.connectRate)} (default)`
      : formatRate(settings.connectRate);
  const networks =
    settings.networks === undefined ? 'any' : settings.networks.map(formatNetwork).join(',');
  const ranges = settings.addressRanges === undefined ? 'any' : settings.addressRanges.join(',');
  return `max-entries ${entries}, connect-rate ${rate}, networks ${networks}, address-ranges ${ranges}, heartbeat-checks ${heartbeatChecksShown(settings)}`;
}

/** `4800/m`, or the default named as such. */
function heartbeatChecksShown(settings: NamespaceSettings): string {
  return settings.heartbeatChecks === undefined
    ? `${formatChecksPerMinute(DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE)} (default)`
    : formatChecksPerMinute(settings.heartbeatChecks);
}

function settingsView(settings: NamespaceSettings, connected: number): Record<string, unknown> {
  return {
    namespace: settings.namespace,
    connected,
    maxEntries: settings.maxEntries ?? DEFAULT_LIMITS.maxEntries,
    connectRatePerSecond: settings.connectRate ?? DEFAULT_LIMITS.connectRate,
    ...(settings.networks === undefined ? {} : { networks: settings.networks }),
    ...(settings.addressRanges === undefined ? {} : { addressRanges: settings.addressRanges }),
    heartbeatChecksPerMinute: settings.heartbeatChecks ?? DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE,
    defaults: FIELDS.filter((field) => settings[field] === undefined),
    ...(settings.updatedAt === undefined ? {} : { updatedAt: formatTimestamp(settings.updatedAt) }),
  };
}

/** The stores of the registry the global options name. */
async function withNamespaceStores(
  context: CliContext,
  command: Command,
  use: (stores: {
    settings: Stores['namespaceSettings'];
    usage: Stores['namespaceUsage'];
    catalog: Stores['catalog'];
  }) => Promise<void>,
): Promise<void> {
  const stores = await context.stores(command);
  await use({
    settings: stores.namespaceSettings,
    usage: stores.namespaceUsage,
    catalog: stores.catalog,
  });
}
