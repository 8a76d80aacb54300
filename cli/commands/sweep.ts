import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULTS, ENV } from '../../lib/config.ts';
import {
  type DisruptionRecord,
  describeHoldReason,
  type ZoneCount,
} from '../../lib/domain/disruption.ts';
import { formatDuration, parseDuration } from '../../lib/domain/duration.ts';
import { runSweep } from '../../lib/registration/sweep.ts';
import type { CommandRegistration } from './context.ts';
import { QUALIFIED } from './resources.ts';

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
        `grace period ${formatDuration(policy.gracePeriodMs)}, max connection age ${formatDuration(policy.maxConnectionAgeMs)} (${source})`,
      ];
      // The summary goes to stderr so stdout lists only entries, one per line.
      context.io.stderr.write(`${summary.filter(Boolean).join('; ')}\n`);
    });

  sweep
    .command('status')
    .description(
      "the sweeper's fail-static state: normal, held or slowed, why, since when, what is held, until when",
    )
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (options: { output: string }, command: Command) => {
      if (options.output !== 'text' && options.output !== 'json') {
        throw new InvalidArgumentError(`--output must be text or json, got '${options.output}'`);
      }
      const { registry } = await context.stores(command);
      const [record, zones] = await Promise.all([
        registry.disruptionRecord(),
        registry.zoneCounts(),
      ]);
      if (options.output === 'json') {
        context.out(`${JSON.stringify(statusJson(record, zones), null, 2)}\n`);
        return;
      }
      context.out(statusText(record, zones, context.now()));
    });
};

function heldSummary(
  held: Record<string, number>,
  slowed: Record<string, number>,
  mode: string | undefined,
): string {
  const count = (counts: Record<string, number>) =>
    Object.values(counts).reduce((sum, value) => sum + value, 0);
  const parts = [];
  if (count(held) > 0) parts.push(`${count(held)} held (${mode}; see registrar sweep status)`);
  if (count(slowed) > 0) parts.push(`${count(slowed)} deferred by a disrupted zone's slower rate`);
  return parts.join('; ');
}

function statusJson(record: DisruptionRecord | undefined, zones: ZoneCount[]) {
  const holdUntil =
    record?.holdSince !== undefined && record.policy
      ? record.holdSince + record.policy.holdBoundMs
      : undefined;
  return {
    mode: record?.mode ?? 'normal',
    since: record ? new Date(record.since).toISOString() : null,
    reason: record?.reason ?? null,
    why: record?.reason && record.policy ? describeHoldReason(record.reason, record.policy) : null,
    holdUntil: holdUntil === undefined ? null : new Date(holdUntil).toISOString(),
    releasedAt: record?.releasedAt ? new Date(record.releasedAt).toISOString() : null,
    evaluatedAt: record ? new Date(record.evaluatedAt).toISOString() : null,
    disruptedZones: record?.disruptedZones ?? [],
    away: zones.reduce((sum, zone) => sum + Math.max(0, zone.away), 0),
    zones: zones.map((zone) => ({
      ...zone,
      disrupted: record?.disruptedZones.includes(zone.zone) ?? false,
    })),
  };
}

const MODE_TEXT: Record<string, string> = {
  normal: 'normal: every due entry is deleted at the normal rate',
  held: 'HELD: no abnormally departed entry is deleted; clean departures and terminated instances still are',
  'hold-expired':
    'HOLD EXPIRED: the hold outlived its bound; deletions resumed at the normal rate (the alarm stays raised)',
  released: 'RELEASED by an operator: deletions at the normal rate until the disruption ends',
};

function statusText(record: DisruptionRecord | undefined, zones: ZoneCount[], now: number): string {
  if (!record) {
    return 'mode:    normal (the sweeper has not run with fail static yet)\n';
  }
  const status = statusJson(record, zones);
  const ago = (at: number) =>
    `${formatDuration(Math.max(0, Math.round((now - at) / 1000) * 1000))} ago`;
  const lines = [
    `mode:    ${MODE_TEXT[record.mode] ?? record.mode}`,
    `since:   ${status.since} (${ago(record.since)})`,
  ];
  if (status.why) lines.push(`why:     ${status.why}`);
  if (record.mode === 'held' || record.mode === 'hold-expired') {
    lines.push(`holding: ${status.away} entries away after an abnormal departure`);
  }
  if (status.holdUntil) lines.push(`until:   ${status.holdUntil} at the latest (the hold bound)`);
  if (status.releasedAt) lines.push(`released: ${status.releasedAt} (registrar sweep --force)`);
  lines.push(`checked: ${status.evaluatedAt} (${ago(record.evaluatedAt)}, the sweeper's last run)`);
  if (zones.length > 0) {
    lines.push('', 'ZONE                          CONNECTED  AWAY  SHARE  STATE');
    for (const zone of status.zones) {
      const total = Math.max(0, zone.connected) + Math.max(0, zone.away);
      const share = total === 0 ? 0 : Math.max(0, zone.away) / total;
      const state = zone.disrupted ? (record.mode === 'held' ? 'held' : 'slowed') : 'ok';
      lines.push(
        `${zone.zone.padEnd(30)}${String(zone.connected).padStart(9)}${String(zone.away).padStart(6)}${`${Math.round(share * 100)}%`.padStart(7)}  ${state}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
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
