import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULTS, ENV } from '../../lib/config.ts';
import { type DisruptionRecord, NO_ZONE, type ZoneCount } from '../../lib/domain/disruption.ts';
import { formatDuration, parseDuration } from '../../lib/domain/duration.ts';
import { statusJson } from '../../lib/presentation/fail-static-status.ts';
import { runSweep } from '../../lib/registration/sweep.ts';
import type { DeparturesInGrace } from '../../lib/store/registry-store.ts';
import { printsObjects, serializeObject } from '../object-output.ts';
import {
  completionValues,
  formatsShown,
  type OutputSpec,
  parseOutput,
  TABLE,
  withCompletionValues,
} from '../output-option.ts';
import type { CommandRegistration } from './context.ts';
import { QUALIFIED } from './resources.ts';

/** `sweep status -o`: the status as an object; without -o, as text. */
const STATUS_FORMATS = ['json', 'yaml', 'jsonpath', 'go-template'] as const;

interface SweepOptions {
  gracePeriod?: number;
  maxConnectionAge?: number;
  maxDeletes: number;
  dryRun?: boolean;
  force?: boolean;
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
      const result = await runSweep(registry, {
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
      const waiting = await registry.departuresInGrace(
        context.now() - policy.gracePeriodMs,
        IN_GRACE_COUNT_LIMIT,
      );
      const verb = result.dryRun ? 'would be deleted' : 'deleted';
      for (const entry of result.deleted) {
        context.out(
          `${QUALIFIED.WorkloadEntry} "${entry.name}" ${verb} (namespace ${entry.namespace}, ${entry.reason})\n`,
        );
      }
      const summary = [
        `${result.deleted.length} ${verb}`,
        `${result.candidatesRead} candidates read`,
        result.conflicts > 0 ? `${result.conflicts} kept: reconnected after they were read` : '',
        heldSummary(result.held, result.slowed, result.disruption?.mode),
        inGraceSummary(waiting, policy.gracePeriodMs, context.now()),
        `grace period ${formatDuration(policy.gracePeriodMs)}, max connection age ${formatDuration(policy.maxConnectionAgeMs)} (${source})`,
      ];
      // The summary goes to stderr so stdout lists only entries, one per line.
      context.io.stderr.write(`${summary.filter(Boolean).join('; ')}\n`);
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
      const { registry } = await context.stores(command);
      const [record, zones] = await Promise.all([
        registry.disruptionRecord(),
        registry.zoneCounts(),
      ]);
      const { output } = options;
      if (!printsObjects(output)) {
        context.out(statusText(record, zones, context.now()));
        return;
      }
      context.out(serializeObject(output, statusJson(record, zones, context.now())));
    });

  registerRollbackIndex(sweep, context);
};

/** How many departed entries `registrar sweep` counts within their grace, at most. */
const IN_GRACE_COUNT_LIMIT = 10_000;

/**
 * "2 departed entries within their grace period, the first due in 4m10s": why a sweep left
 * entries that are disconnected, so "0 deleted" is not read as "nothing left".
 */
export function inGraceSummary(
  waiting: DeparturesInGrace,
  gracePeriodMs: number,
  now: number,
): string {
  if (waiting.count === 0) return '';
  const count = `${waiting.count}${waiting.more ? '+' : ''}`;
  const noun = waiting.count === 1 && !waiting.more ? 'departed entry' : 'departed entries';
  const their = waiting.count === 1 && !waiting.more ? 'its' : 'their';
  const first =
    waiting.firstDisconnectedAt === undefined
      ? ''
      : `, the first due in ${formatDuration(Math.max(1000, Math.ceil((waiting.firstDisconnectedAt + gracePeriodMs - now) / 1000) * 1000))}`;
  return `${count} ${noun} within ${their} grace period${first}`;
}

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

function heldSummary(
  held: Record<string, number>,
  slowed: Record<string, number>,
  mode: string | undefined,
): string {
  const count = (counts: Record<string, number>) =>
    Object.values(counts).reduce((sum, value) => sum + value, 0);
  const parts = [];
  if (count(held) > 0) parts.push(`${count(held)} held (${mode}; see registrar sweep status)`);
  if (count(slowed) > 0) parts.push(`${count(slowed)} deferred by a disrupted cell's slower rate`);
  return parts.join('; ');
}

const MODE_TEXT: Record<string, string> = {
  normal: 'normal: every due entry is deleted at the normal rate',
  held: 'HELD: abnormally departed entries of the held namespaces are not deleted; clean departures and terminated instances still are',
  'hold-expired':
    'HOLD EXPIRED: the hold outlived its bound; deletions resumed at the normal rate (the alarm stays raised)',
  released: 'RELEASED by an operator: deletions at the normal rate until the disruption ends',
};

const STATE_TEXT: Record<string, string> = {
  normal: 'normal rate',
  slowed: 'slowed',
  held: 'held',
  'bound passed': 'normal rate (slowed past its bound)',
};

function statusText(record: DisruptionRecord | undefined, zones: ZoneCount[], now: number): string {
  if (!record) {
    return 'mode:    normal (the sweeper has not run with fail static yet)\n';
  }
  const status = statusJson(record, zones, now);
  const ago = (at: number) =>
    `${formatDuration(Math.max(0, Math.round((now - at) / 1000) * 1000))} ago`;
  const slowed = status.cells.filter((cell) => cell.state === 'slowed').length;
  const mode =
    record.mode === 'normal' && slowed > 0
      ? `normal: every due entry is deleted at the normal rate, except in the ${slowed} slowed ${slowed === 1 ? 'cell' : 'cells'} below`
      : (MODE_TEXT[record.mode] ?? record.mode);
  const lines = [`mode:    ${mode}`, `since:   ${status.since} (${ago(record.since)})`];
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
    lines.push(`holding: ${held} entries away after an abnormal departure ${where}`);
  }
  if (status.holdUntil) lines.push(`until:   ${status.holdUntil} at the latest (the hold bound)`);
  if (status.releasedAt) lines.push(`released: ${status.releasedAt} (registrar sweep --force)`);
  lines.push(`checked: ${status.evaluatedAt} (${ago(record.evaluatedAt)}, the sweeper's last run)`);
  if (zones.length > 0) {
    const rows = status.cells.map((cell) => {
      const total = Math.max(0, cell.connected) + Math.max(0, cell.away);
      const share = total === 0 ? 0 : Math.max(0, cell.away) / total;
      return [
        cell.namespace,
        cell.zone,
        String(cell.connected),
        String(cell.away),
        `${Math.round(share * 100)}%`,
        STATE_TEXT[cell.state] ?? cell.state,
        cell.until ?? '',
      ];
    });
    lines.push(
      '',
      ...table(['NAMESPACE', 'ZONE', 'CONNECTED', 'AWAY', 'SHARE', 'STATE', 'UNTIL'], rows),
    );
    lines.push(
      '',
      "Each namespace is judged in each zone on its own: one namespace's departures never slow or hold another's.",
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
