import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULTS, ENV } from '../../lib/config.ts';
import { formatDuration, parseDuration } from '../../lib/domain/duration.ts';
import { runSweep } from '../../lib/registration/sweep.ts';
import type { CommandRegistration } from './context.ts';
import { QUALIFIED } from './resources.ts';

interface SweepOptions {
  gracePeriod?: number;
  maxConnectionAge?: number;
  maxDeletes: number;
  dryRun?: boolean;
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
  program
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
    .action(async (options: SweepOptions, command: Command) => {
      const { registry, sweepPolicy } = await context.stores(command);
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
      });
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
        `grace period ${formatDuration(policy.gracePeriodMs)}, max connection age ${formatDuration(policy.maxConnectionAgeMs)} (${source})`,
      ];
      // The summary goes to stderr so stdout lists only entries, one per line.
      context.io.stderr.write(`${summary.filter(Boolean).join('; ')}\n`);
    });
};

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
