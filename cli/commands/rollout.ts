import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import type { ObjectRef } from '../../lib/domain/model.ts';
import { toJson, toYaml } from '../../lib/presentation/output.ts';
import {
  describeRolloutStatus,
  type RolloutStatus,
  rolloutStatus,
} from '../../lib/rollout/rollout-status.ts';
import { type DryRunMode, dryRunSuffix, writeNothingOption } from '../dry-run-option.ts';
import { positiveDurationOption } from '../duration-option.ts';
import { Interrupted, interruption } from '../interrupt.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import { parseResourceArgs } from '../resource-args.ts';
import { type CliContext, type CommandRegistration, type Stores, UsageError } from './context.ts';
import { namespaceOf, namespaceOption, notFound, QUALIFIED } from './resources.ts';

interface RolloutOptions {
  namespace?: string;
  dryRun?: DryRunMode;
  output?: OutputSpec;
  watch?: boolean;
  watchInterval: number;
}

const HELP = `
A change to a group's template (labels, annotations, ports, weight, locality) reaches its live
entries as a rollout, paced like a Deployment's: a step of entries, then a pause (the group's
annotation workload-registrar/rollout-pace, such as 25%/10s (the default) or 500/30s). No agent
reconnects; labels an agent gave still win. A change of the service account or network is not
rolled out (it would change a running VM's identity or name): such entries take it when they
register again.

Examples:
  registrar rollout status wg/web -n shop        entries updated / total, paused or not
  registrar rollout status wg/web -n shop -w     wait until every entry is on the template
  registrar rollout pause wg/web -n shop         no entry is changed until resume
  registrar rollout resume wg/web -n shop`;

/** `registrar rollout status|pause|resume wg/NAME`, as `kubectl rollout` for a Deployment. */
export const registerRollout: CommandRegistration = (program, context) => {
  const rollout = program
    .command('rollout')
    .description("a group's template rollout to its live entries: status, pause, resume")
    .addHelpText('after', HELP);
  rollout
    .command('status')
    .description("show how many entries are on the group's current template")
    .argument('<resource>', 'wg/NAME, or wg')
    .argument('[name]', 'the group, when the type is given apart')
    .addOption(namespaceOption())
    .addOption(outputOption(['json', 'yaml']))
    .option('-w, --watch', 'print each change until every entry is on the template (Ctrl-C stops)')
    .addOption(
      positiveDurationOption('--watch-interval <duration>', 'how often --watch reads', '2s'),
    )
    .action(
      async (
        resource: string,
        name: string | undefined,
        options: RolloutOptions,
        command: Command,
      ) => {
        const ref = groupRef(resource, name, options);
        const stores = await context.stores(command);
        if (!options.watch) {
          print(context, options, await statusOf(stores, ref));
          return;
        }
        const stop = interruption(context.io);
        try {
          let last = '';
          for (;;) {
            const status = await statusOf(stores, ref);
            const shown = JSON.stringify(status);
            if (shown !== last) print(context, options, status);
            last = shown;
            if (status.state === 'complete') return;
            await sleep(options.watchInterval, undefined, { signal: stop.signal }).catch(() => {});
            if (stop.signal.aborted) throw new Interrupted(stop.reason());
          }
        } finally {
          stop.dispose();
        }
      },
    );
  for (const verb of ['pause', 'resume'] as const) {
    rollout
      .command(verb)
      .description(
        verb === 'pause'
          ? "stop writing the group's entries until resume (a template change then waits)"
          : 'let a paused rollout go on from where it stopped',
      )
      .argument('<resource>', 'wg/NAME, or wg')
      .argument('[name]', 'the group, when the type is given apart')
      .addOption(namespaceOption())
      .addOption(writeNothingOption())
      .action(
        async (
          resource: string,
          name: string | undefined,
          options: RolloutOptions,
          command: Command,
        ) => {
          const ref = groupRef(resource, name, options);
          const stores = await context.stores(command);
          if (!(await stores.rollouts.getGroup(ref))) throw notFound('WorkloadGroup', ref);
          const paused = (await stores.rollouts.getRollout(ref))?.pausedAt !== undefined;
          if (verb === 'pause' && paused)
            throw new Error(`workloadgroups "${ref.name}" is already paused`);
          if (verb === 'resume' && !paused)
            throw new Error(`workloadgroups "${ref.name}" is not paused`);
          if (options.dryRun !== undefined && options.dryRun !== 'none') {
            context.out(
              `${QUALIFIED.WorkloadGroup}/${ref.name} ${verb}d ${dryRunSuffix(options.dryRun)}\n`,
            );
            return;
          }
          await stores.rollouts.setPaused(ref, verb === 'pause' ? context.now() : undefined);
          context.out(`${QUALIFIED.WorkloadGroup}/${ref.name} ${verb}d\n`);
        },
      );
  }
};

function groupRef(resource: string, name: string | undefined, options: RolloutOptions): ObjectRef {
  const [request, ...more] = parseResourceArgs(
    'roll out',
    name === undefined ? [resource] : [resource, name],
  );
  if (
    !request ||
    more.length > 0 ||
    request.kind !== 'WorkloadGroup' ||
    request.names.length !== 1
  ) {
    throw new UsageError('name one workloadgroup: wg/NAME (only groups have rollouts)');
  }
  return { namespace: namespaceOf(options), name: request.names[0] as string };
}

async function statusOf(stores: Stores, ref: ObjectRef): Promise<RolloutStatus> {
  const stored = await stores.rollouts.getGroup(ref);
  if (!stored) throw notFound('WorkloadGroup', ref);
  const [record, entries] = await Promise.all([
    stores.rollouts.getRollout(ref),
    stores.rollouts.groupEntries(ref),
  ]);
  return rolloutStatus(stored, record, entries);
}

function print(context: CliContext, options: RolloutOptions, status: RolloutStatus): void {
  if (options.output?.format === 'json') context.out(toJson(status));
  else if (options.output?.format === 'yaml') context.out(toYaml(status));
  else
    context.out(
      describeRolloutStatus(status)
        .map((line) => `${line}\n`)
        .join(''),
    );
}
