import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULTS, ENV } from '../../lib/config.ts';
import { type DisruptionRecord, NO_ZONE, type ZoneCount } from '../../lib/domain/disruption.ts';
import { formatDuration, parseDuration } from '../../lib/domain/duration.ts';
import { type CellStatus, failStaticStatus } from '../../lib/domain/fail-static-status.ts';
import { runSweep } from '../../lib/registration/sweep.ts';
import { printsObjects, serializeObject } from '../object-output.ts';
import {
  completionValues,
  formatsShown,
  type OutputFormatName,
  type OutputSpec,
  parseOutput,
  TABLE,
  withCompletionValues,
} from '../output-option.ts';
import { countOf } from '../plural.ts';
import { namespaceScoped, printSweep, SWEEP_FORMATS } from '../sweep-report.ts';
import { type CommandRegistration, UsageError } from './context.ts';
import { parseNamespace } from './resources.ts';

export { inGraceSummary } from '../sweep-report.ts';

/** `sweep status -o`: the status as an object; without -o, as text. */
const STATUS_FORMATS = ['json', 'yaml', 'jsonpath', 'go-template'] as const;

interface SweepOptions {
  gracePeriod?: number;
  maxConnectionAge?: number;
  maxDeletes: number;
  dryRun?: boolean;
  force?: boolean;
  namespace?: string;
  output?: string;
}

/** A positive duration flag (`5m`, `2h`); 0 would mean "sweep everything", so it is refused. */
export function durationOption(flags: string, description: string, fallback?: string): Option {
  const option = new Option(flags, description).argParser(parsePositiveDuration);
  return fallback === undefined
    ? option
    : option.default(parsePositiveDuration(fallback), fallback);
}

function parsePositiveDuration(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new InvalidArgumentError('must be a positive duration such as 30s, 5m or 2h');
  return ms;
}

function parsePositiveInteger(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0)
    throw new InvalidArgumentError('must be a positive whole number');
  return value;
}

export const registerSweep: CommandRegistration = (program, context) => {
  const sweep = program
    .command('sweep')
    .description('run one sweep now: delete auto-registered entries that are disconnected or stale')
    .addOption(
      durationOption(
        '--grace-period <duration>',
        "how long an entry may stay disconnected (default: the registrar's recorded policy)",
      ),
    )
    .addOption(
      durationOption(
        '--max-connection-age <duration>',
        "connected entries older than 1.5x this are stale (default: the registrar's recorded policy)",
      ),
    )
    .addOption(
      new Option('--max-deletes <count>', 'most entries to delete in this run')
        .argParser(parsePositiveInteger)
        .default(DEFAULTS.sweepMaxDeletes),
    )
    .option('--dry-run', 'show what would be deleted, delete nothing')
    .addOption(
      new Option(
        '-n, --namespace <namespace>',
        'sweep only this namespace (default: every namespace)',
      ).argParser(parseNamespace),
    )
    .addOption(
      // Kept as written and parsed in the action: commander gives an option that comes after a
      // subcommand (`sweep status -o yaml`) to this command when both have it, so `status`
      // reads it from here too, with its own formats.
      withCompletionValues(
        new Option('-o, --output <format>', `output format: ${formatsShown(SWEEP_FORMATS)}`),
        completionValues(SWEEP_FORMATS),
      ),
    )
    .option(
      '--force',
      "release the sweeper's hold (or slowdown) until the disruption ends, then sweep at the normal rate",
    )
    .action(async (options: SweepOptions, command: Command) => {
      const { registry, sweepPolicy } = await context.stores(command);
      if (options.force && !options.dryRun) {
        const released = await registry.releaseHold(context.now());
        context.io.stderr.write(
          released === 'released'
            ? 'hold released: abnormally departed entries are deleted at the normal rate until the disruption ends\n'
            : 'the sweeper is not holding or slowing anything; nothing to release\n',
        );
      }
      // Fail static applies to a manual sweep too, with the policy the registrar's sweeper
      // recorded: a sweep by hand must not delete what the registrar holds. Before the
      // sweeper first ran there is nothing to hold.
      const disruption = await registry.disruptionRecord();
      // The registrar's own policy, as its sweeper or local runtime recorded it: a manual sweep
      // must never delete what the registrar still keeps. Flags override it on purpose.
      const recorded = await sweepPolicy.read();
      if (
        !recorded &&
        (options.gracePeriod === undefined || options.maxConnectionAge === undefined)
      ) {
        context.io.stderr.write(
          `no sweep policy recorded in this table (the registrar's sweeper has not run yet); using ${ENV.gracePeriod}/${ENV.maxConnectionAge} or the defaults\n`,
        );
      }
      const policy = {
        gracePeriodMs:
          options.gracePeriod ??
          recorded?.gracePeriodMs ??
          fromEnv(context.io.env, ENV.gracePeriod, DEFAULTS.gracePeriod),
        maxConnectionAgeMs:
          options.maxConnectionAge ??
          recorded?.maxConnectionAgeMs ??
          fromEnv(context.io.env, ENV.maxConnectionAge, DEFAULTS.maxConnectionAge),
      };
      const source =
        options.gracePeriod !== undefined || options.maxConnectionAge !== undefined
          ? 'set by flags'
          : recorded
            ? `the registrar's, recorded ${new Date(recorded.recordedAt).toISOString()}`
            : 'defaults';
      const { namespace } = options;
      const output = outputOf(options.output, SWEEP_FORMATS);
      const scoped = namespace === undefined ? registry : namespaceScoped(registry, namespace);
      const result = await runSweep(scoped, {
        now: context.now(),
        policy,
        maxDeletes: options.maxDeletes,
        deletesPerSecond: DEFAULTS.sweepDeletesPerSecond,
        dryRun: options.dryRun ?? false,
        ...(disruption?.policy
          ? {
              failStatic: {
                ...disruption.policy,
                sweepIntervalMs: recorded?.sweepIntervalMs ?? 60_000,
              },
            }
          : {}),
      });
      // Counted in every namespace (the store has no per-namespace count): left out under -n
      // rather than said of the wrong namespaces.
      const waiting =
        namespace === undefined
          ? await registry.departuresInGrace(
              context.now() - policy.gracePeriodMs,
              IN_GRACE_COUNT_LIMIT,
            )
          : undefined;
      printSweep(context, output, {
        result,
        namespace,
        waiting,
        policy: { ...policy, source },
        now: context.now(),
      });
    });

  sweep
    .command('status')
    .description(
      "the sweeper's fail-static state per namespace and zone: normal, held or slowed, why, since when, until when",
    )
    .addOption(
      withCompletionValues(
        new Option('-o, --output <format>', `output format: ${formatsShown(STATUS_FORMATS)}`)
          // `text` is the default view's old name, still accepted.
          .argParser((text: string) =>
            text === 'text' ? TABLE : parseOutput(text, STATUS_FORMATS),
          )
          .default(TABLE, 'the status as text'),
        completionValues(STATUS_FORMATS),
      ),
    )
    .action(async (options: { output: OutputSpec }, command: Command) => {
      // `-o` after `status` lands on `sweep` (see its -o): read it from there.
      const given = command.parent?.opts<{ output?: string }>().output;
      const output =
        given === undefined
          ? options.output
          : given === 'text'
            ? TABLE
            : outputOf(given, STATUS_FORMATS);
      const { registry } = await context.stores(command);
      const [record, zones] = await Promise.all([
        registry.disruptionRecord(),
        registry.zoneCounts(),
      ]);
      if (!printsObjects(output)) {
        context.out(statusText(record, zones, context.now()));
        return;
      }
      context.out(serializeObject(output, failStaticStatus(record, zones, context.now())));
    });

  registerRollbackIndex(sweep, context);
};

/** `-o TEXT` with these formats (the table without it); a format they lack is a usage error. */
function outputOf(
  text: string | undefined,
  formats: readonly Exclude<OutputFormatName, 'table'>[],
): OutputSpec {
  if (text === undefined) return TABLE;
  try {
    return parseOutput(text, formats);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw new UsageError(
      `option '-o, --output <format>' argument '${text}' is invalid. ${error.message}`,
    );
  }
}

/** How many departed entries `registrar sweep` counts within their grace, at most. */
const IN_GRACE_COUNT_LIMIT = 10_000;

/**
 * `registrar sweep rollback-index`: after rolling the registrar back to release 0.1.0, moves
 * the departures this release keyed per namespace back to where 0.1.0's sweeper reads them.
 */
function registerRollbackIndex(sweep: Command, context: Parameters<CommandRegistration>[1]) {
  sweep
    .command('rollback-index')
    .description(
      "after a rollback to release 0.1.0: move departed entries back to the sweep index keys 0.1.0's sweeper reads (idempotent; run again if cut short)",
    )
    .action(async (_options: unknown, command: Command) => {
      const { registry } = await context.stores(command);
      const { moved } = await registry.moveDeparturesToSharedKeys();
      context.out(
        `${moved} departed ${moved === 1 ? 'entry' : 'entries'} moved to the keys release 0.1.0 sweeps\n`,
      );
    });
}

/** The fleet's word (lib/domain/cell-mode.ts) first, in capitals while deletions are held back. */
const MODE_TEXT: Record<string, string> = {
  normal: 'normal: every due entry is deleted at the normal rate',
  held: 'HELD: abnormally departed entries of the held namespaces are not deleted; clean departures and terminated instances still are',
  'hold-expired':
    'HOLD EXPIRED: the hold outlived its bound; deletions resumed at the normal rate (the alarm stays raised)',
  released: 'RELEASED by an operator: deletions at the normal rate until the disruption ends',
};

/** A cell's word, with why a disrupted cell is at the normal rate anyway. */
function stateText(cell: CellStatus): string {
  return cell.note ? `${cell.state} (${cell.note})` : cell.state;
}

function statusText(record: DisruptionRecord | undefined, zones: ZoneCount[], now: number): string {
  if (!record) {
    return 'mode:    normal (the sweeper has not run with fail static yet)\n';
  }
  const status = failStaticStatus(record, zones, now);
  const ago = (at: number) =>
    `${formatDuration(Math.max(0, Math.round((now - at) / 1000) * 1000))} ago`;
  const slowed = status.cells.filter((cell) => cell.state === 'slowed').length;
  const mode =
    status.mode === 'slowed'
      ? `SLOWED: abnormally departed entries are deleted slowly in the ${slowed} slowed ${slowed === 1 ? 'cell' : 'cells'} below; every other due entry is deleted at the normal rate`
      : (MODE_TEXT[status.mode] ?? status.mode);
  const since = status.since === null ? record.since : Date.parse(status.since);
  const lines = [`mode:    ${mode}`, `since:   ${status.since} (${ago(since)})`];
  if (status.why) lines.push(`why:     ${status.why}`);
  if (record.mode === 'held' || record.mode === 'hold-expired') {
    const where = status.heldNamespaces
      ? `in namespace${status.heldNamespaces.length === 1 ? '' : 's'} ${status.heldNamespaces.join(', ')}`
      : 'in every namespace';
    const held = status.cells
      .filter((cell) => record.mode !== 'held' || cell.state === 'held')
      .filter(
        (cell) => status.heldNamespaces === null || status.heldNamespaces.includes(cell.namespace),
      )
      .reduce((sum, cell) => sum + Math.max(0, cell.away), 0);
    lines.push(
      `holding: ${countOf(held, 'entry', 'entries')} away after an abnormal departure ${where}`,
    );
  }
  if (status.holdUntil) lines.push(`until:   ${status.holdUntil} at the latest (the hold bound)`);
  if (status.releasedAt) lines.push(`released: ${status.releasedAt} (registrar sweep --force)`);
  lines.push(`checked: ${status.evaluatedAt} (${ago(record.evaluatedAt)}, the sweeper's last run)`);
  if (zones.length > 0) {
    const rows = status.cells.map((cell) => {
      return [
        cell.namespace,
        cell.zone,
        String(cell.connected),
        String(cell.away),
        String(Math.max(0, cell.left ?? 0)),
        `${Math.round(cell.share * 100)}%`,
        stateText(cell),
        cell.until ?? '',
      ];
    });
    lines.push(
      '',
      ...table(['NAMESPACE', 'ZONE', 'CONNECTED', 'AWAY', 'LEFT', 'SHARE', 'STATE', 'UNTIL'], rows),
    );
    lines.push(
      '',
      "Each namespace is judged in each zone on its own: one namespace's departures never slow or hold another's.",
      'LEFT: entries that departed cleanly and are not swept yet (they count in the population, not as away).',
      'SHARE: entries away after an abnormal departure, of the most the cell had in the last window and grace period.',
    );
    if (zones.some((zone) => zone.zone === NO_ZONE)) {
      lines.push(`ZONE ${NO_ZONE}: entries whose locality names no zone.`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Left-aligned columns, two spaces apart, numbers right-aligned (kubectl's style). */
function table(header: string[], rows: string[][]): string[] {
  const numeric = new Set([2, 3, 4]);
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) =>
        numeric.has(i) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0),
      )
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** Without a recorded policy, the sweeper's own variables, then the defaults. */
function fromEnv(
  env: Record<string, string | undefined>,
  variable: string,
  fallback: string,
): number {
  const text = env[variable] || fallback;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    throw new Error(
      `invalid ${variable} '${text}': must be a positive duration such as 30s, 5m or 2h`,
    );
  }
  return ms;
}
