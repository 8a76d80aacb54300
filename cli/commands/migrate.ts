import type { Command } from 'commander';
import {
  BASELINE_SCHEMA,
  incompatibility,
  type SchemaRecord,
} from '../../lib/domain/table-schema.ts';
import {
  formatAge,
  formatTable,
  formatTimestamp,
  toJson,
  toYaml,
} from '../../lib/presentation/output.ts';
import { codeSchema, runMigrations } from '../../lib/registration/run-migrations.ts';
import type { Migration } from '../../lib/registration/schema-store.ts';
import { RELEASE } from '../../lib/release.ts';
import { type DryRunMode, dryRunSuffix, writeNothingOption } from '../dry-run-option.ts';
import { interruption } from '../interrupt.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import type { CliContext, CommandRegistration } from './context.ts';

/**
 * `registrar migrate`: the table's schema record and this release's migrations. The sweeper
 * runs them by itself, a page at a time in the time its sweep leaves (docs/deploy.md,
 * "Upgrading"); `run` does the rest now, with the operator's credentials.
 */
export const registerMigrate: CommandRegistration = (program, context) => {
  const migrate = program
    .command('migrate')
    .description("the table's schema: which migrations ran, which release wrote it; run the rest");

  migrate
    .command('status')
    .description("show the table's schema record and this release's migrations")
    .addOption(outputOption(['json', 'yaml']))
    .action(async (options: { output: OutputSpec }, command: Command) => {
      const { schema, migrations } = await context.tableSchema(command);
      const record = await schema.read();
      if (options.output.format === 'json' || options.output.format === 'yaml') {
        const status = statusJson(record, migrations);
        context.out(options.output.format === 'json' ? toJson(status) : toYaml(status));
        return;
      }
      context.out(statusText(context, record, migrations));
    });

  migrate
    .command('run')
    .description("run this release's pending migrations now (the sweeper would, in its spare time)")
    .addOption(writeNothingOption())
    .action(async (options: { dryRun: DryRunMode }, command: Command) => {
      const { schema, migrations } = await context.tableSchema(command);
      if (options.dryRun !== 'none') {
        const record = await schema.read();
        const pending = migrations.filter((m) => stateOf(record, m) !== 'done');
        const suffix = dryRunSuffix(options.dryRun);
        for (const m of pending) context.out(`migration ${m.id} ${m.name} run ${suffix}\n`);
        if (pending.length === 0) context.out(`nothing to migrate ${suffix}\n`);
        return;
      }
      const stop = interruption(context.io);
      try {
        const run = await runMigrations({
          schema,
          migrations,
          release: RELEASE,
          now: () => context.now(),
          outOfTime: () => stop.signal.aborted,
        });
        const done =
          run.completed.length > 0 ? `migrated: ${run.completed.join(', ')}` : 'nothing to migrate';
        const left =
          run.pending.length > 0
            ? `; interrupted, still to run: ${run.pending.join(', ')} (run again, or let the sweeper go on)`
            : '';
        context.out(`${done}${left}; the table is at schema ${run.record.schema}\n`);
      } finally {
        stop.dispose();
      }
    });
};

function statusJson(record: SchemaRecord | undefined, migrations: readonly Migration[]) {
  return {
    release: RELEASE,
    codeSchema: codeSchema(migrations),
    record: record ?? null,
    migrations: migrations.map((m) => ({
      id: m.id,
      name: m.name,
      summary: m.summary,
      state: stateOf(record, m),
    })),
  };
}

function stateOf(record: SchemaRecord | undefined, migration: Migration): string {
  if ((record?.schema ?? BASELINE_SCHEMA) >= migration.id) return 'done';
  return record?.running?.id === migration.id ? 'running' : 'pending';
}

function statusText(
  context: CliContext,
  record: SchemaRecord | undefined,
  migrations: readonly Migration[],
): string {
  const now = context.now();
  const mine = { release: RELEASE, schema: codeSchema(migrations) };
  const lines = [
    record
      ? `schema:     ${record.schema} (registrar ${RELEASE} knows up to ${mine.schema})`
      : `schema:     ${BASELINE_SCHEMA}: no schema record, the table is as 0.1 left it (the sweeper records it on its next run)`,
  ];
  if (record) {
    lines.push(
      `written by: ${record.writtenBy} (the newest release that ran on this table)`,
      `last run:   ${record.lastRunBy}, ${formatTimestamp(record.lastRunAt)} (${formatAge(record.lastRunAt, now)} ago)`,
      `readable:   by code of schema ${record.readableFrom} and newer: ${incompatibility(record, mine) ?? `registrar ${RELEASE} may run on it`}`,
    );
  }
  const history = new Map(record?.history.map((h) => [h.id, h]) ?? []);
  const rows = migrations.map((m) => {
    const done = history.get(m.id);
    const running = record?.running?.id === m.id ? record.running : undefined;
    const progress = done ?? running;
    return [
      String(m.id),
      m.name,
      stateOf(record, m),
      progress ? String(progress.items) : '',
      progress ? String(progress.writes) : '',
      done ? formatTimestamp(done.finishedAt) : '',
    ];
  });
  return `${lines.join('\n')}\n\n${formatTable(['SCHEMA', 'MIGRATION', 'STATE', 'ITEMS', 'WRITES', 'FINISHED'], rows)}`;
}
